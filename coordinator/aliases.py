"""Aliases, renames and collection properties: metadata-only DDL.

An alias is a second name for a collection (``rootcoord/alias/<alias>`` ->
collection id); every read and write accepts it where it accepts a collection
name, and ``alter_alias`` moves it to another collection in one write, which
is how users switch traffic to a rebuilt collection. Names are one namespace:
an alias cannot take a collection's name or the other way round. As in Milvus,
a collection with aliases cannot be dropped, nor dropped through an alias.

Renaming moves the name reservation and the collection's name in one etcd
transaction; aliases follow the collection (they point at its id).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import structlog

from common.errors import ErrorCode, InvalidArgument, StrataError
from common.names import alias_not_found, check_alias, check_collection_name, collection_not_found
from common.timezone import check_timezone
from common.ttl import check_ttl
from coordinator.catalog import Catalog, CollectionMeta


def check_properties(props: dict[str, str]) -> None:
    check_ttl(props)
    check_timezone(props)


class AliasDDL:
    def __init__(self, catalog: Catalog, lock: asyncio.Lock) -> None:
        self._catalog = catalog
        self._lock = lock  # the collection DDL's: one DDL at a time
        self._log = structlog.get_logger().bind(component="ddl")

    async def resolve(self, name: str) -> int | None:
        """The collection id ``name`` names, as a collection name or as an alias."""
        found = await self._catalog.collection_id_by_name(name)
        return found if found is not None else await self._catalog.alias_target(name)

    async def aliases_of(self, collection_id: int) -> list[str]:
        return sorted(a for a, c in (await self._catalog.list_aliases()).items() if c == collection_id)

    async def _check_free(self, name: str) -> None:
        if await self._catalog.collection_id_by_name(name) is not None:
            raise InvalidArgument(f"{name} is a collection name: it cannot be used as an alias")

    async def create(self, alias: str, meta: CollectionMeta) -> None:
        check_alias(alias)
        async with self._lock:
            await self._check_free(alias)
            current = await self._catalog.alias_target(alias)
            if current is not None:
                if current == meta.collection_id:
                    return
                raise StrataError(
                    f"alias {alias} already exists and points to another collection",
                    ErrorCode.COLLECTION_ALREADY_EXISTS,
                )
            await self._catalog.save_alias(alias, meta.collection_id)
        self._log.info("alias created", alias=alias, collection=meta.name)

    async def alter(self, alias: str, meta: CollectionMeta) -> None:
        async with self._lock:
            if await self._catalog.alias_target(alias) is None:
                raise alias_not_found(alias)
            await self._catalog.save_alias(alias, meta.collection_id)
        self._log.info("alias altered", alias=alias, collection=meta.name)

    async def drop(self, alias: str) -> None:
        async with self._lock:
            if await self._catalog.alias_target(alias) is None:
                return  # dropping an alias that does not exist is a no-op, as in Milvus
            await self._catalog.remove_alias(alias)
        self._log.info("alias dropped", alias=alias)

    async def describe(self, alias: str) -> int:
        target = await self._catalog.alias_target(alias)
        if target is None:
            raise alias_not_found(alias)
        return target

    async def check_drop(self, requested: str, meta: CollectionMeta) -> None:
        """Refuse dropping a collection through an alias, or one that still has aliases."""
        if requested and requested != meta.name:
            raise InvalidArgument(f"cannot drop the collection via alias = {requested}")
        aliases = await self.aliases_of(meta.collection_id)
        if aliases:
            raise InvalidArgument(
                f"unable to drop the collection [{meta.name}] because it has associated aliases {aliases}, "
                "please remove all aliases before dropping the collection"
            )

    async def rename(self, meta: CollectionMeta, new_name: str) -> None:
        check_collection_name(new_name)
        async with self._lock:
            if await self._catalog.alias_target(new_name) is not None:
                raise InvalidArgument(f"cannot rename collection to an existing alias: {new_name}")
            fresh = await self._catalog.get_collection(meta.collection_id)
            if fresh is None:
                raise collection_not_found(meta.name)
            if not await self._catalog.rename(fresh, new_name):
                raise StrataError(f"duplicated new collection name {new_name}", ErrorCode.COLLECTION_ALREADY_EXISTS)
        self._log.info("collection renamed", old=meta.name, new=new_name)

    async def alter_properties(self, meta: CollectionMeta, props: dict[str, str], delete_keys: list[str]) -> None:
        check_properties(props)
        async with self._lock:
            fresh = await self._catalog.get_collection(meta.collection_id)
            if fresh is None:
                raise collection_not_found(meta.name)
            merged = {k: v for k, v in {**fresh.properties, **props}.items() if k not in delete_keys}
            await self._catalog.save_collection(replace(fresh, properties=merged))
        self._log.info("collection properties altered", collection=meta.name, set=sorted(props), deleted=delete_keys)
