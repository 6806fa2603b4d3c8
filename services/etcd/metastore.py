"""The metadata store every component writes through.

A thin layer over ``aetcd`` that namespaces keys under a root path and offers
only what the catalog needs: get, prefix scan, put, delete, compare-and-swap
transactions and prefix watches. Values are bytes; callers encode JSON.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

import aetcd
from aetcd.utils import prefix_range_end

from services.etcd.watch import EtcdWatch


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


# Every unary etcd call fails after this long instead of hanging on a frozen etcd.
CALL_TIMEOUT_SECONDS = 10


class MetaStore:
    """Namespaced etcd access. Keys given to methods are relative to ``root``."""

    def __init__(self, client: aetcd.Client, root: str) -> None:
        self._client = client
        self._root = root.rstrip("/") + "/"

    @staticmethod
    async def connect(endpoint: str, root: str = "strata") -> MetaStore:
        host, _, port = endpoint.rpartition(":")
        client = aetcd.Client(host=host or "127.0.0.1", port=int(port), timeout=CALL_TIMEOUT_SECONDS)
        await client.status()  # fail fast if etcd is not there
        return MetaStore(client, root)

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
        await self._client.put(self.full_key(key), value, lease=lease)

    async def delete(self, key: str) -> None:
        await self._client.delete(self.full_key(key))

    async def delete_prefix(self, prefix: str) -> None:
        await self._client.delete_prefix(self.full_key(prefix))

    async def multi(self, ops: Sequence[Op]) -> None:
        """Apply every op in one etcd transaction (all or nothing)."""
        await self._client.transaction(compare=[], success=self._writes(ops), failure=[])

    def _writes(self, ops: Sequence[Op]) -> list[object]:
        tx = self._client.transactions
        return [
            tx.put(self.full_key(o.key), o.value) if o.value is not None else tx.delete(self.full_key(o.key))
            for o in ops
        ]

    async def create_if_absent(
        self, key: str, value: bytes, *, lease: aetcd.Lease | None = None, also: Sequence[Op] = ()
    ) -> bool:
        """Put ``key`` only if it does not exist, together with ``also`` (one transaction).

        True if this call created it; when False nothing at all was written.
        """
        tx = self._client.transactions
        full = self.full_key(key)
        ok, _ = await self._client.transaction(
            compare=[tx.version(full) == 0],
            success=[tx.put(full, value, lease=lease), *self._writes(also)],
            failure=[],
        )
        return bool(ok)

    async def watch_prefix(
        self, prefix: str, *, start_revision: int | None = None
    ) -> AsyncGenerator[WatchEvent, None]:
        """Yield changes under ``prefix`` (from ``start_revision`` if given) until the caller stops.

        A broken stream raises ``services.etcd.watch.WatchBroken``; it never ends quietly.
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
