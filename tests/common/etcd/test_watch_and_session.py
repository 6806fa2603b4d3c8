"""Etcd watches on their own streams, and sessions that get lost, against a real etcd."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest

from common.etcd.metastore import MetaStore, WatchEvent
from common.etcd.process import EtcdProcess
from common.etcd.session import Session, list_sessions, watch_sessions
from common.etcd.watch import WatchBroken

_roots = itertools.count()


async def _store(endpoint: str) -> MetaStore:
    return await MetaStore.connect(endpoint, f"watch-test-{next(_roots)}")


async def _take(gen: object, n: int) -> list[WatchEvent]:
    out: list[WatchEvent] = []
    async for ev in gen:  # type: ignore[attr-defined]
        out.append(ev)
        if len(out) == n:
            break
    return out


async def test_watch_from_a_revision_sees_every_change_after_the_scan(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        await store.put("p/a", b"1")
        _, revision = await store.scan_at("p/")
        # Changes between the scan and the watch are not lost: the watch starts at revision + 1.
        await store.put("p/b", b"2")
        await store.delete("p/a")
        await store.put("q/other", b"x")  # outside the prefix
        events = await asyncio.wait_for(_take(store.watch_prefix("p/", start_revision=revision + 1), 2), 10)
        assert events == [WatchEvent("p/b", b"2"), WatchEvent("p/a", None)]
    finally:
        await store.close()


async def test_watch_key_ignores_other_keys_with_the_same_prefix(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        gen = store.watch_key("leader")
        first = asyncio.ensure_future(_take(gen, 1))
        await asyncio.sleep(0.3)
        await store.put("leader-2", b"no")
        await store.put("leader", b"yes")
        assert await asyncio.wait_for(first, 10) == [WatchEvent("leader", b"yes")]
    finally:
        await store.close()


async def test_many_watches_created_and_cancelled_quickly_never_hang(etcd_endpoint: str) -> None:
    # aetcd's shared watch stream could wait for ever here; each of ours has its own stream.
    store = await _store(etcd_endpoint)
    try:

        async def one(i: int) -> None:
            gen = store.watch_key(f"k{i % 5}")
            task = asyncio.ensure_future(anext(gen))
            await asyncio.sleep(0.001 * (i % 3))
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await gen.aclose()

        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(200))), 30)
        # The store still works and a fresh watch still sees changes.
        waiting = asyncio.ensure_future(_take(store.watch_key("k1"), 1))
        await asyncio.sleep(0.3)
        await store.put("k1", b"v")
        assert await asyncio.wait_for(waiting, 10) == [WatchEvent("k1", b"v")]
    finally:
        await store.close()


async def test_a_compacted_start_revision_is_refused(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        await store.put("c/x", b"1")
        await store.put("c/x", b"2")
        _, revision = await store.scan_at("c/")
        await store.client.compact(revision)
        with pytest.raises(WatchBroken, match="compact"):
            await asyncio.wait_for(_take(store.watch_prefix("c/", start_revision=revision - 1), 1), 10)
    finally:
        await store.close()


async def test_a_watch_raises_when_etcd_goes_away(tmp_path: Path) -> None:
    etcd = EtcdProcess(tmp_path / "data")
    etcd.start()
    try:
        store = await MetaStore.connect(etcd.endpoint, "gone")
        try:
            waiting = asyncio.ensure_future(_take(store.watch_prefix("x/"), 1))
            await asyncio.sleep(0.3)
            etcd.stop()
            with pytest.raises(WatchBroken):
                await asyncio.wait_for(waiting, 15)
        finally:
            await store.close()
    finally:
        etcd.stop()


async def test_watch_sessions_reports_joins_and_leaves(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    try:
        gen = watch_sessions(store, "worker")
        assert await asyncio.wait_for(anext(gen), 10) == {}
        s = Session(store, "worker", "127.0.0.1:1", ttl_seconds=5)
        info = await s.start()
        assert await asyncio.wait_for(anext(gen), 10) == {info.server_id: info}
        await s.stop()
        assert await asyncio.wait_for(anext(gen), 10) == {}
        await gen.aclose()
    finally:
        await store.close()


async def test_a_lost_session_releases_its_work_and_registers_anew(etcd_endpoint: str) -> None:
    store = await _store(etcd_endpoint)
    other = await MetaStore.connect(etcd_endpoint, "unused")
    released = asyncio.Event()
    registered: list[int] = []

    async def on_lost() -> None:
        released.set()

    s = Session(store, "node", "127.0.0.1:2", ttl_seconds=2, on_lost=on_lost,
                on_registered=lambda info: registered.append(info.server_id))  # fmt: skip
    try:
        first = await s.start()
        assert registered == [first.server_id]
        # Revoking the lease is what an expiry does: the key goes, the keep-alive learns it.
        kv = await store.client.get(store.full_key(first.key))
        assert kv is not None
        await other.client.revoke_lease(kv.lease)
        await asyncio.wait_for(released.wait(), 5)
        async with asyncio.timeout(10):
            while len(registered) < 2:
                await asyncio.sleep(0.05)
        assert registered[1] > registered[0] and s.lost_count == 1
        assert [x.server_id for x in await list_sessions(store, "node")] == [registered[1]]
    finally:
        await s.stop()
        await other.close()
        await store.close()
