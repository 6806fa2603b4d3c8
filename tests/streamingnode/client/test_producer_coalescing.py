"""The Producer coalesces concurrent appends into shared Produce requests; each caller gets its own answer."""

from __future__ import annotations

import asyncio

import pyarrow as pa
import pytest

from common.errors import NotReady, StrataError
from common.message import Insert
from streamingnode.client.producer import Producer
from streamingnode.walmanager.manager import WALManager

pytestmark = pytest.mark.timeout(30)



class StaticSource:
    """Always the same owner; counts reported errors."""

    def __init__(self, address: str, term: int) -> None:
        self.address, self.term, self.errors = address, term, 0

    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        if self.term <= newer_than_term:
            raise NotReady("no newer term")
        return self.address, self.term

    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        self.errors += 1


def _insert(i: int) -> Insert:
    table = pa.table({"id": pa.array([i], pa.int64())})
    return Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=table)


async def test_concurrent_appends_share_requests_and_get_their_own_results(served: tuple[WALManager, str]) -> None:
    manager, address = served
    producer = Producer(StaticSource(address, 1))
    try:
        sizes = [1 + i % 3 for i in range(200)]
        results = await asyncio.gather(
            *(producer.append("p0", [_insert(i * 10 + j) for j in range(n)]) for i, n in enumerate(sizes))
        )
        assert [len(r) for r in results] == sizes
        ids = [a.message_id for r in results for a in r]
        assert len(set(ids)) == len(ids)
        fsyncs = manager.get("p0", 1).impl.fsync_count  # type: ignore[attr-defined]
        assert fsyncs < len(results)  # coalesced requests share group commits
    finally:
        await producer.close()


async def test_a_transaction_is_not_merged_with_other_appends(served: tuple[WALManager, str]) -> None:
    _, address = served
    producer = Producer(StaticSource(address, 1))
    try:
        plain = [producer.append("p0", [_insert(i)]) for i in range(20)]
        txn = producer.append("p0", [_insert(100), _insert(101), _insert(102)], txn=True)
        *_, txn_result = await asyncio.gather(*plain, txn)
        assert len({a.timetick for a in txn_result}) == 1
    finally:
        await producer.close()


async def test_a_refused_request_fails_every_merged_caller(served: tuple[WALManager, str]) -> None:
    _, address = served
    source = StaticSource(address, 7)  # the node serves term 1: every request is refused
    producer = Producer(source)
    try:
        outcomes = await asyncio.gather(
            *(producer.append("p0", [_insert(i)], timeout=2) for i in range(10)), return_exceptions=True
        )
        assert all(isinstance(o, StrataError) for o in outcomes)
        assert source.errors >= 1
    finally:
        await producer.close()
