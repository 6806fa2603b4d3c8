"""Active/standby coordinators: leader election on one etcd key.

Every coordinator process is a candidate. A candidate grants itself a lease
(the session TTL, 15 s by default), keeps it alive, and tries to create
``<root>/session/coordinator`` (``LEADER_KEY``) under that lease with a compare-and-swap on the
key's version. Whoever creates the key is the leader; the others watch the key
and try again once it is deleted (``resign()``) or expires with its lease (the
leader died or lost etcd).

The value is a ``common.coordclient.LeaderInfo``, the contract clients read:
the server id and the gRPC address. The address is empty while the new leader starts its components;
:meth:`Election.proclaim` fills it in once the leader serves, and clients
(``common.coordclient``) wait for a non-empty address.

Losing the lease is fatal to a leader: the keep-alive task calls ``on_lost``
*before* the lease can have expired on the etcd side (it counts from the time
the last successful refresh was sent), so an old leader stops before a standby
can win. The coordinator's ``on_lost`` exits the process, as Milvus does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import aetcd
import structlog

from common.coordclient import LEADER_KEY, LeaderInfo
from common.etcd.lease import keep_alive
from common.etcd.metastore import MetaStore
from common.tasks import BackgroundTasks

__all__ = ["LEADER_KEY", "Election", "LeaderInfo", "LeadershipLost"]


class LeadershipLost(Exception):
    """Raised by :meth:`Election.proclaim` when the key no longer belongs to this candidate."""


class Election:
    """One candidate. ``campaign()`` blocks until it leads; ``resign()`` gives the lead up.

    Not reusable: after ``resign()`` or a lost lease, build a new ``Election``.
    """

    def __init__(
        self,
        store: MetaStore,
        *,
        ttl_seconds: int = 15,
        on_lost: Callable[[], None],
        key: str = LEADER_KEY,
    ) -> None:
        if ttl_seconds < 2:
            raise ValueError("election TTL must be at least 2 seconds")
        self._store = store
        self._ttl = ttl_seconds
        self._on_lost = on_lost
        self._key = key
        self._lease: aetcd.Lease | None = None
        self._keepalive_task: asyncio.Task[None] | None = None
        self._lease_lost = asyncio.Event()
        self._leading = False
        self._create_revision = 0
        self._log = structlog.get_logger().bind(component="election", key=key)
        self._tasks = BackgroundTasks("election", key=key)

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def create_revision(self) -> int:
        """The etcd revision at which this candidate created the leader key (0 before it led).

        Writes guarded by it (``MetaStore.guarded``) fail once anyone else holds the key.
        """
        return self._create_revision

    async def campaign(self, info: LeaderInfo) -> None:
        """Return once this candidate holds the leader key with value ``info``.

        Blocks for as long as another candidate leads. Cancelling it leaves the
        lease alive; call :meth:`resign` to clean up.
        """
        client = self._store.client
        tx = client.transactions
        full = self._store.full_key(self._key)
        logged_standby = False
        while True:
            if self._lease is None or self._lease_lost.is_set():
                await self._grant_lease()
            assert self._lease is not None
            ok, _ = await client.transaction(
                compare=[tx.version(full) == 0],
                success=[tx.put(full, info.to_json(), lease=self._lease)],
                failure=[],
            )
            current = await client.get(full)
            if ok and current is not None and current.lease == self._lease.id:
                self._create_revision = current.create_revision
                self._leading = True
                self._log.info("elected", server_id=info.server_id, lease=self._lease.id)
                return
            if current is None:
                continue  # the holder went away between our two calls: try again at once
            if not logged_standby:
                holder = LeaderInfo.from_json(current.value)
                self._log.info("standing by", leader=holder.server_id, leader_address=holder.address)
                logged_standby = True
            try:
                await self._wait_for_delete(current.header.revision + 1)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # a standby waits out etcd hiccups rather than exiting
                self._log.warning("leader watch failed, retrying", error=str(err))
                await asyncio.sleep(0.5)

    async def _wait_for_delete(self, start_revision: int) -> None:
        """Wait until the key is deleted at or after ``start_revision``, or our own lease is lost."""

        async def deleted() -> None:
            async for ev in self._store.watch_key(self._key, start_revision=start_revision):
                if ev.value is None:
                    return

        waiters = [
            asyncio.create_task(deleted(), name="election-watch"),
            asyncio.create_task(self._lease_lost.wait(), name="election-lease-lost"),
        ]
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()  # surface a broken watch to the caller
        finally:
            await _cancel_all(waiters)

    async def _grant_lease(self) -> None:
        await self._stop_keepalive()
        self._lease_lost.clear()
        self._lease = await self._store.client.lease(self._ttl)
        self._keepalive_task = self._tasks.start(self._keepalive(self._lease), name="election-keepalive")

    async def _keepalive(self, lease: aetcd.Lease) -> None:
        await keep_alive(lease, self._ttl, self._lost, self._log)

    def _lost(self, reason: str) -> None:
        self._lease_lost.set()
        if self._leading:
            self._leading = False
            self._log.error("leadership lost", reason=reason)
            self._on_lost()
        else:
            self._log.warning("candidate lease lost", reason=reason)

    async def proclaim(self, info: LeaderInfo) -> None:
        """Replace the leader key's value (e.g. with the serving address); only while leading."""
        assert self._lease is not None and self._leading, "proclaim before campaign"
        client = self._store.client
        tx = client.transactions
        full = self._store.full_key(self._key)
        ok, _ = await client.transaction(
            compare=[tx.create(full) == self._create_revision],
            success=[tx.put(full, info.to_json(), lease=self._lease)],
            failure=[],
        )
        if not ok:
            raise LeadershipLost("the leader key belongs to another candidate")

    async def resign(self) -> None:
        """Give up the lead (or the candidacy): revoking the lease deletes the key at once."""
        self._leading = False
        await self._stop_keepalive()
        if self._lease is not None:
            with contextlib.suppress(Exception):  # best effort: the lease expires on its own anyway
                await self._lease.revoke()
            self._lease = None
        self._log.info("resigned")

    async def _stop_keepalive(self) -> None:
        if self._keepalive_task is not None:
            await self._tasks.cancel(self._keepalive_task)
            self._keepalive_task = None


async def _cancel_all(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel child tasks and wait for them to finish.

    ``asyncio.wait`` never raises the children's exceptions, so a ``CancelledError`` that
    reaches this coroutine is the caller's own cancellation and propagates, unlike
    ``suppress(CancelledError)`` around ``await task``, which would swallow it.
    """
    for t in tasks:
        t.cancel()
    if tasks:
        await asyncio.wait(tasks)
    for t in tasks:
        if not t.cancelled():
            t.exception()  # retrieve it: a child that failed while stopping has nothing left to do
