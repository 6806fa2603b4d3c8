"""Metadata store, sessions, TSO and ID allocation against a real etcd."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from common.etcd.metastore import MetaStore, Op
from common.etcd.session import Session, list_sessions
from coordinator.idalloc import IDAllocator
from coordinator.tso import TimestampOracle, physical_ms

_roots = itertools.count()


async def _store(endpoint: str) -> MetaStore:
    return await MetaStore.connect(endpoint, f"test-{next(_roots)}")


async def test_put_get_scan_multi_and_cas(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        await store.put("a/1", b"x")
        await store.multi([Op(key="a/2", value=b"y"), Op(key="a/1", value=None)])
        assert await store.get("a/1") is None
        assert [(kv.key, kv.value) for kv in await store.scan("a/")] == [("a/2", b"y")]
        assert await store.create_if_absent("a/3", b"z")
        assert not await store.create_if_absent("a/3", b"w")
        assert await store.get("a/3") == b"z"
    finally:
        await store.close()


async def test_tso_is_monotonic_across_restarts(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        tso = TimestampOracle(store)
        await tso.start()
        seen = [await tso.allocate(n) for n in (1, 5, 1, 1000)]
        assert seen == sorted(seen) and len(set(seen)) == 4
        last = await tso.allocate()
        # A new oracle (restart / failover) starts above everything the old one could issue.
        tso2 = TimestampOracle(store)
        await tso2.start()
        assert await tso2.allocate() > last
        assert physical_ms(last) > 0
    finally:
        await store.close()


async def test_ids_never_repeat_across_restarts(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        ids = IDAllocator(store)
        await ids.start()
        first = await ids.allocate(10)
        second = await ids.allocate(1)
        assert second >= first + 10
        ids2 = IDAllocator(store)
        await ids2.start()
        assert await ids2.allocate() > second
    finally:
        await store.close()


async def test_session_disappears_when_revoked(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        s = Session(store, "streamingnode", "127.0.0.1:1", ttl_seconds=5)
        info = await s.start()
        assert [x.server_id for x in await list_sessions(store, "streamingnode")] == [info.server_id]
        await s.stop()
        await asyncio.sleep(0)
        assert await list_sessions(store, "streamingnode") == []
    finally:
        await store.close()


async def test_many_writes_go_in_batches_below_etcds_transaction_limit(etcd_endpoint: str) -> None:
    # etcd refuses one transaction of more than 128 operations (its default --max-txn-ops); dropping a
    # collection of hundreds of segments writes them all.
    store = await _store(etcd_endpoint)
    try:
        ops = [Op(key=f"many/{i:04d}", value=b"v") for i in range(300)]
        with pytest.raises(Exception, match="too many operations"):
            await store.multi(ops)
        assert await store.scan("many/") == []  # all or nothing
        await store.multi_batched(ops)
        assert len(await store.scan("many/")) == 300
    finally:
        await store.close()
