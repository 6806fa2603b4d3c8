"""Aliases to collections for the privilege check, through the proxy's metadata cache."""

from __future__ import annotations

from common.errors import StrataError
from proxy.auth.interceptor import Resolver
from proxy.metacache import MetaCache


def collection_resolver(cache: MetaCache) -> Resolver:
    """A resolver that answers the collection behind a name or alias, or the name itself when
    there is none (a collection about to be created, a typo: the handler reports those)."""

    async def resolve(name: str) -> str:
        try:
            return (await cache.get(name)).name
        except StrataError:
            return name

    return resolve
