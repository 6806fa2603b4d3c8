"""The metadata store every component writes through.

A thin layer over ``aetcd`` that namespaces keys under a root path and offers
only what the catalog needs: get, prefix scan, put, delete, compare-and-swap
transactions and prefix watches. Values are bytes; callers encode JSON.

A *guarded* view (:meth:`MetaStore.guarded`) makes every write conditional on
one key still having the create revision it had when the guard was taken. The
coordinator guards its writes with the leader key, so a leader that was frozen
past its lease while another was elected cannot make even one stale write:
the write raises ``NotLeader`` and changes nothing.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import aetcd
from aetcd.utils import prefix_range_end

from common.errors import StrataError
from common.etcd.watch import EtcdWatch


class NotLeader(StrataError):
    """A guarded write was refused: the guard key was deleted or created anew by someone else."""


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    mod_revision: int


@dataclass(frozen=True, slots=True)
class WatchEvent:
    key: str
    value: bytes | None  # None: deleted


@dataclass(frozen=True, slots=True, kw_only=True)
class Op:
    """One write of a transaction: a put (value set) or a delete (value None)."""

    key: str
    value: bytes | None


@dataclass(frozen=True, slots=True)
class _Guard:
    key: bytes
    create_revision: int
    on_refused: Callable[[], None] | None


# Every unary etcd call fails after this long instead of hanging on a frozen etcd.
CALL_TIMEOUT_SECONDS = 10
TXN_BATCH_OPS = 100  # below etcd's default --max-txn-ops (128)


class MetaStore:
    """Namespaced etcd access. Keys given to methods are relative to ``root``."""

    def __init__(self, client: aetcd.Client, root: str, *, guard: _Guard | None = None) -> None:
        self._client = client
        self._root = root.rstrip("/") + "/"
        self._guard = guard

    @staticmethod
    async def connect(endpoint: str, root: str = "strata") -> MetaStore:
        host, _, port = endpoint.rpartition(":")
        client = aetcd.Client(host=host or "127.0.0.1", port=int(port), timeout=CALL_TIMEOUT_SECONDS)
        await client.status()  # fail fast if etcd is not there
        return MetaStore(client, root)

    def guarded(self, key: str, create_revision: int, *, on_refused: Callable[[], None] | None = None) -> MetaStore:
        """A view on the same connection whose writes require ``key`` to keep ``create_revision``.

        A refused write calls ``on_refused`` (if given), then raises ``NotLeader``; it wrote
        nothing. Reads and watches are not guarded. Closing the view closes the shared connection.
        """
        return MetaStore(self._client, self._root, guard=_Guard(self.full_key(key), create_revision, on_refused))

    @property
    def client(self) -> aetcd.Client:
        return self._client

    def full_key(self, key: str) -> bytes:
        return (self._root + key).encode()

    def _strip(self, raw: bytes) -> str:
        return raw.decode()[len(self._root) :]

    async def get(self, key: str) -> bytes | None:
        r = await self._client.get(self.full_key(key))
        return None if r is None else r.value

    async def get_versioned(self, key: str) -> tuple[bytes | None, int]:
        """The value and its etcd version (writes since creation; 0 when the key does not exist)."""
        r = await self._client.get(self.full_key(key))
        return (None, 0) if r is None else (r.value, int(r.version))

    async def put_if_version(self, key: str, value: bytes, version: int) -> bool:
        """Put ``key`` only if its version is still ``version`` (0: absent); True if written.

        The version grows by one with each write, so a writer that remembers ``version + 1``
        after a success holds the key until anyone else writes it.
        """
        tx = self._client.transactions
        full = self.full_key(key)
        return await self._txn([tx.version(full) == version], [tx.put(full, value)])

    async def scan(self, prefix: str) -> list[KeyValue]:
        rs = await self._client.get_prefix(self.full_key(prefix))
        return [KeyValue(self._strip(kv.key), kv.value, kv.mod_revision) for kv in rs]

    async def scan_at(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Like :meth:`scan`, plus the store revision the result was read at."""
        full = self.full_key(prefix)
        client = self._client
        await client.connect()
        resp = await client.kvstub.Range(
            aetcd.rpc.RangeRequest(key=full, range_end=prefix_range_end(full)),
            timeout=CALL_TIMEOUT_SECONDS,
            metadata=client.metadata,
        )
        kvs = [KeyValue(self._strip(kv.key), kv.value, kv.mod_revision) for kv in resp.kvs]
        return kvs, int(resp.header.revision)

    async def put(self, key: str, value: bytes, *, lease: aetcd.Lease | None = None) -> None:
        if self._guard is None:
            await self._client.put(self.full_key(key), value, lease=lease)
        else:
            await self._txn([], [self._client.transactions.put(self.full_key(key), value, lease=lease)])

    async def delete(self, key: str) -> None:
        if self._guard is None:
            await self._client.delete(self.full_key(key))
        else:
            await self._txn([], [self._client.transactions.delete(self.full_key(key))])

    async def delete_prefix(self, prefix: str) -> None:
        full = self.full_key(prefix)
        if self._guard is None:
            await self._client.delete_prefix(full)
        else:
            await self._txn([], [self._client.transactions.delete(full, range_end=prefix_range_end(full))])

    async def multi(self, ops: Sequence[Op]) -> None:
        """Apply every op in one etcd transaction (all or nothing). etcd refuses a transaction of
        more than ``--max-txn-ops`` operations (128 by default): use :meth:`multi_batched` for
        writes that may be many and need not be atomic together."""
        await self._txn([], self._writes(ops))

    async def multi_batched(self, ops: Sequence[Op], batch: int = TXN_BATCH_OPS) -> None:
        """Apply ``ops`` in order, ``batch`` per transaction: each batch is atomic, the whole is
        not. For idempotent writes (marking segments dropped, moving checkpoints) whose caller
        repeats them after a failure."""
        for first in range(0, len(ops), batch):
            await self.multi(ops[first : first + batch])

    async def create_if_absent(
        self, key: str, value: bytes, *, lease: aetcd.Lease | None = None, also: Sequence[Op] = ()
    ) -> bool:
        """Put ``key`` only if it does not exist, together with ``also`` (one transaction).

        True if this call created it; when False nothing at all was written.
        """
        tx = self._client.transactions
        full = self.full_key(key)
        return await self._txn([tx.version(full) == 0], [tx.put(full, value, lease=lease), *self._writes(also)])

    def _writes(self, ops: Sequence[Op]) -> list[Any]:
        tx = self._client.transactions
        return [
            tx.put(self.full_key(o.key), o.value) if o.value is not None else tx.delete(self.full_key(o.key))
            for o in ops
        ]

    async def _txn(self, compare: list[Any], success: list[Any]) -> bool:
        """One transaction under the guard, if any; False if one of ``compare`` failed.

        Raises ``NotLeader`` when it was the guard that failed.
        """
        guard = self._guard
        if guard is not None:
            compare = [*compare, self._client.transactions.create(guard.key) == guard.create_revision]
        ok, _ = await self._client.transaction(compare=compare, success=success, failure=[])
        if ok:
            return True
        if guard is not None:
            holder = await self._client.get(guard.key)
            if holder is None or holder.create_revision != guard.create_revision:
                if guard.on_refused is not None:
                    guard.on_refused()
                raise NotLeader(
                    f"write refused: {guard.key.decode()} is no longer the one created at revision "
                    f"{guard.create_revision}"
                )
        return False

    async def watch_prefix(
        self, prefix: str, *, start_revision: int | None = None
    ) -> AsyncGenerator[WatchEvent, None]:
        """Yield changes under ``prefix`` (from ``start_revision`` if given) until the caller stops.

        A broken stream raises ``common.etcd.watch.WatchBroken``; it never ends quietly.
        """
        full = self.full_key(prefix)
        async with EtcdWatch(
            self._client, full, range_end=prefix_range_end(full), start_revision=start_revision
        ) as watch:
            async for batch in watch.events():
                for ev in batch:
                    yield WatchEvent(self._strip(ev.key), ev.value)

    async def watch_key(self, key: str, *, start_revision: int | None = None) -> AsyncGenerator[WatchEvent, None]:
        """Yield changes of one key; see :meth:`watch_prefix`."""
        async with EtcdWatch(self._client, self.full_key(key), start_revision=start_revision) as watch:
            async for batch in watch.events():
                for ev in batch:
                    yield WatchEvent(key, ev.value)

    async def close(self) -> None:
        await self._client.close()
