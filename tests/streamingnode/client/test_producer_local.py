"""The Producer appends to the pchannels of this process's streaming node without gRPC (standalone).

A pchannel whose owner is the local node's address is appended to through its
WALManager directly: nothing listens on that address, so any gRPC attempt
would fail. A pchannel of another node still goes through its Produce stream.
A term the local node no longer serves is re-resolved and retried, as a
"not appended" answer from Produce is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pyarrow as pa
import pytest

from common.errors import ErrorCode, NotReady, StrataError
from common.message import Insert, decode
from protos import common_pb2
from streamingnode.client.local import LocalStreamingNode
from streamingnode.client.producer import Producer
from streamingnode.walimpls import DeliverPolicy
from streamingnode.walimpls.registry import build_opener
from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.decodes import count_decodes
from tests.streamingnode.fakes import CountingAllocator

pytestmark = pytest.mark.timeout(30)

# Nothing listens here: an append that tried gRPC would fail as unreachable.
LOCAL = "127.0.0.1:1"


class Owners:
    """pchannel -> [(address, term), ...]: resolve returns the first entry newer than asked."""

    def __init__(self, owners: dict[str, list[tuple[str, int]]]) -> None:
        self.owners = owners
        self.errors: list[tuple[str, int]] = []

    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        for address, term in self.owners[pchannel]:
            if term > newer_than_term:
                return address, term
        raise NotReady(f"no owner of {pchannel} newer than term {newer_than_term}")

    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        self.errors.append((pchannel, term))


@pytest.fixture
async def local_manager(tmp_path: Path) -> AsyncIterator[WALManager]:
    opener = build_opener("local", root_dir=tmp_path / "local-wal")
    manager = WALManager(opener, CountingAllocator(), tick_interval=0.05)
    try:
        yield manager
    finally:
        await manager.close()
        await opener.close()


def _insert(first: int, rows: int = 3) -> Insert:
    table = pa.table({"id": pa.array(range(first, first + rows), pa.int64())})
    return Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=table)


async def _ids_in(manager: WALManager, pchannel: str, term: int, count: int) -> list[int]:
    """The ids of the first ``count`` Inserts in the WAL, read back from the start."""
    ids: list[int] = []
    reader = manager.get(pchannel, term).read(DeliverPolicy.all())
    async with asyncio.timeout(5):
        async for _mid, msg in reader:
            if msg.type == common_pb2.MessageType.INSERT:
                ids += decode(msg).table().column("id").to_pylist()
                count -= 1
                if count == 0:
                    break
    await reader.aclose()  # type: ignore[attr-defined]
    return ids


async def test_local_owner_is_appended_to_without_grpc(local_manager: WALManager,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    await local_manager.open("p0", 1)
    producer = Producer(Owners({"p0": [(LOCAL, 1)]}), LocalStreamingNode(LOCAL, local_manager))
    try:
        decodes = count_decodes(monkeypatch)
        first = await producer.append("p0", [_insert(0), _insert(3)])
        second = await producer.append("p0", [_insert(6)], txn=True)
        assert not decodes  # the WAL took the typed messages as they are
        assert len(first) == 2 and len(second) == 1
        ticks = [a.timetick for a in first + second]
        assert ticks == sorted(ticks) and len(set(a.message_id for a in first + second)) == 3
        assert await _ids_in(local_manager, "p0", 1, 3) == list(range(9))
    finally:
        await producer.close()


async def test_other_owners_still_go_through_produce(
    local_manager: WALManager, served: tuple[WALManager, str]
) -> None:
    remote_manager, address = served
    await local_manager.open("p0", 1)  # the served node has its own p0, at term 1 as well
    owners = Owners({"p0": [(LOCAL, 1)], "p1": [(address, 1)]})
    await remote_manager.open("p1", 1)
    producer = Producer(owners, LocalStreamingNode(LOCAL, local_manager))
    try:
        await asyncio.gather(producer.append("p0", [_insert(0)]), producer.append("p1", [_insert(100)]))
        assert await _ids_in(local_manager, "p0", 1, 1) == [0, 1, 2]
        assert await _ids_in(remote_manager, "p1", 1, 1) == [100, 101, 102]
    finally:
        await producer.close()


async def test_a_term_the_local_node_does_not_serve_is_re_resolved(local_manager: WALManager) -> None:
    await local_manager.open("p0", 2)
    # The assignment still names term 1 first (a stale cache); the node serves term 2.
    owners = Owners({"p0": [(LOCAL, 1), (LOCAL, 2)]})
    producer = Producer(owners, LocalStreamingNode(LOCAL, local_manager))
    try:
        (result,) = await producer.append("p0", [_insert(0)])
        assert owners.errors == [("p0", 1)]
        assert result.timetick > 0
        assert await _ids_in(local_manager, "p0", 2, 1) == [0, 1, 2]
    finally:
        await producer.close()


async def test_a_pchannel_not_open_here_fails_with_its_code_when_no_owner_appears(
    local_manager: WALManager,
) -> None:
    owners = Owners({"p9": [(LOCAL, 1)]})
    producer = Producer(owners, LocalStreamingNode(LOCAL, local_manager))
    try:
        with pytest.raises(NotReady, match="newer than term 1"):
            await producer.append("p9", [_insert(0)])
        assert owners.errors == [("p9", 1)]
        # With no time left to retry, the local node's own answer is the error (not "unreachable").
        with pytest.raises(StrataError) as info:
            await producer.append("p9", [_insert(0)], timeout=0)
        assert info.value.code == ErrorCode.CHANNEL_NOT_EXIST
    finally:
        await producer.close()
