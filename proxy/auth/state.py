"""The proxy's copy of the security catalog (users, roles, grants, groups), kept current.

``start`` reads every ``security/`` key, then follows them with an etcd watch: each change
(through this proxy or another) reloads the whole prefix, which is small (at most 100 users and
a few roles). Changes made through this proxy also ``reload()`` before they answer, so a client
sees its own change at once; so do a rename and a drop of a collection, whose grants the
coordinator moves or revokes (``Security.collections_changed``). While the watch is down (etcd away) the last state stays in force.
Listeners (the credential cache) hear of every new state.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import structlog
from aetcd.utils import prefix_range_end

from common.etcd.metastore import MetaStore
from common.etcd.watch import EtcdWatch
from common.rbac import catalog
from common.rbac.catalog import SecurityState


class SecurityStateCache:
    def __init__(self, store: MetaStore) -> None:
        self._store = store
        self._state = SecurityState()
        self._revision = -1
        self._listeners: list[Callable[[SecurityState], None]] = []
        self._follow: asyncio.Task[None] | None = None
        self._log = structlog.get_logger().bind(component="security-state")

    @property
    def state(self) -> SecurityState:
        return self._state

    def on_change(self, listener: Callable[[SecurityState], None]) -> None:
        self._listeners.append(listener)

    async def start(self) -> None:
        """Load the state, then follow it until ``stop``."""
        await self.reload()
        self._follow = asyncio.create_task(self._follow_changes(), name="security-state-follow")

    async def stop(self) -> None:
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow
            self._follow = None

    async def reload(self) -> SecurityState:
        """Read the whole prefix; a read older than the state held is dropped."""
        kvs, revision = await self._store.scan_at(catalog.PREFIX)
        if revision >= self._revision:
            self._revision = revision
            self._state = SecurityState.from_kvs(kvs)
            for listener in self._listeners:
                listener(self._state)
        return self._state

    async def _follow_changes(self) -> None:
        full = self._store.full_key(catalog.PREFIX)
        while True:
            try:
                async with EtcdWatch(self._store.client, full, range_end=prefix_range_end(full)) as watch:
                    await self.reload()  # changes while no watch was open
                    async for _batch in watch.events():
                        await self.reload()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: the watch must outlive etcd hiccups
                self._log.warning("security watch failed, re-watching", error=str(err))
            await asyncio.sleep(0.5)
