"""Coordinator leader election against a real etcd: hand-over on resign, on expiry, and fencing."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from common.coordclient import LEADER_KEY, CoordinatorClient, LeaderInfo, read_leader
from common.etcd.metastore import MetaStore, NotLeader
from coordinator.election import Election


@pytest.fixture()
async def stores(etcd_endpoint: str) -> AsyncIterator[Callable[[], MetaStore]]:
    """Clients of one etcd root that is unique to the test; each candidate gets its own."""
    root = f"election-{uuid.uuid4().hex}"
    opened: list[MetaStore] = []
    pending: list[MetaStore] = []
    for _ in range(3):
        pending.append(await MetaStore.connect(etcd_endpoint, root))

    def take() -> MetaStore:
        store = pending.pop()
        opened.append(store)
        return store

    try:
        yield take
    finally:
        for store in opened + pending:
            await store.close()


def _never_lost() -> None:
    raise AssertionError("leadership must not be lost in this test")


async def test_standby_leads_after_the_leader_resigns(stores: Callable[[], MetaStore]) -> None:
    a = Election(stores(), ttl_seconds=5, on_lost=_never_lost)
    b = Election(stores(), ttl_seconds=5, on_lost=_never_lost)
    observer = stores()
    await asyncio.wait_for(a.campaign(LeaderInfo(server_id=1)), 5)
    await a.proclaim(LeaderInfo(server_id=1, address="127.0.0.1:1001"))
    assert a.is_leader
    assert await read_leader(observer) == LeaderInfo(server_id=1, address="127.0.0.1:1001")

    standby = asyncio.create_task(b.campaign(LeaderInfo(server_id=2)))
    try:
        await asyncio.sleep(1.0)
        assert not standby.done() and not b.is_leader
        await a.resign()
        await asyncio.wait_for(standby, 5)
        assert b.is_leader and not a.is_leader
        assert await read_leader(observer) == LeaderInfo(server_id=2)
    finally:
        standby.cancel()
        await b.resign()
    assert await read_leader(observer) is None


async def test_standby_leads_after_the_leader_lease_expires(stores: Callable[[], MetaStore]) -> None:
    a = Election(stores(), ttl_seconds=2, on_lost=_never_lost)
    b = Election(stores(), ttl_seconds=2, on_lost=_never_lost)
    await asyncio.wait_for(a.campaign(LeaderInfo(server_id=1)), 5)
    # A frozen or killed leader: its keep-alive stops and nobody revokes the lease.
    await a._stop_keepalive()
    frozen_at = time.monotonic()
    try:
        await asyncio.wait_for(b.campaign(LeaderInfo(server_id=2)), 10)
        waited = time.monotonic() - frozen_at
        assert b.is_leader
        assert await read_leader(stores()) == LeaderInfo(server_id=2)
        # Not before the old lease could have expired, and not much later than its TTL.
        assert 1.0 <= waited <= 6.0, waited
    finally:
        await a.resign()
        await b.resign()


async def test_leader_is_told_when_its_lease_is_lost(stores: Callable[[], MetaStore]) -> None:
    lost = asyncio.Event()
    a_store = stores()
    a = Election(a_store, ttl_seconds=2, on_lost=lost.set)
    try:
        await asyncio.wait_for(a.campaign(LeaderInfo(server_id=1)), 5)
        # Another etcd client revokes the lease, as an expiry would: the keep-alive notices.
        lease = (await a_store.client.get(a_store.full_key(LEADER_KEY))).lease
        await stores().client.revoke_lease(lease)
        await asyncio.wait_for(lost.wait(), 5)
        assert not a.is_leader
    finally:
        await a.resign()


async def test_client_follows_the_leader_key(stores: Callable[[], MetaStore]) -> None:
    a = Election(stores(), ttl_seconds=5, on_lost=_never_lost)
    b = Election(stores(), ttl_seconds=5, on_lost=_never_lost)
    client = CoordinatorClient(stores())
    try:
        await a.campaign(LeaderInfo(server_id=1))
        # Elected but not yet serving: no address, so the client keeps waiting.
        with pytest.raises(Exception, match="no active coordinator"):
            await client.stub(timeout=0.3)
        await a.proclaim(LeaderInfo(server_id=1, address="127.0.0.1:1001"))
        await client.stub(timeout=5)
        assert client.address == "127.0.0.1:1001"

        standby = asyncio.create_task(b.campaign(LeaderInfo(server_id=2)))
        await a.resign()
        await asyncio.wait_for(standby, 5)
        await b.proclaim(LeaderInfo(server_id=2, address="127.0.0.1:1002"))
        # No reset() from the caller: the client's watch drops the stale stub by itself.
        deadline = time.monotonic() + 5
        while client.address != "127.0.0.1:1002":
            assert time.monotonic() < deadline, client.address
            await client.stub(timeout=5)
            await asyncio.sleep(0.05)
    finally:
        await client.close()
        await a.resign()
        await b.resign()


async def test_a_frozen_leaders_guarded_writes_are_refused_once_a_standby_leads(
    stores: Callable[[], MetaStore],
) -> None:
    a_store, b_store, observer = stores(), stores(), stores()
    a = Election(a_store, ttl_seconds=2, on_lost=lambda: None)
    b = Election(b_store, ttl_seconds=2, on_lost=_never_lost)
    try:
        await asyncio.wait_for(a.campaign(LeaderInfo(server_id=1)), 5)
        refused: list[str] = []
        a_meta = a_store.guarded(LEADER_KEY, a.create_revision, on_refused=lambda: refused.append("a"))
        await a_meta.put("tso/high-water-ms", b"100")  # the leader writes as usual

        await a._stop_keepalive()  # a freezes; its lease expires and b wins
        await asyncio.wait_for(b.campaign(LeaderInfo(server_id=2)), 10)
        b_meta = b_store.guarded(LEADER_KEY, b.create_revision)
        await b_meta.put("tso/high-water-ms", b"200")

        # a wakes up with its state from before: its writes must not land.
        with pytest.raises(NotLeader):
            await a_meta.put("tso/high-water-ms", b"150")
        assert refused == ["a"]
        assert await observer.get("tso/high-water-ms") == b"200"
    finally:
        await a.resign()
        await b.resign()
