"""Both ``StreamingNodes`` (gRPC and in-process) open appenders that answer alike.

The same WAL manager, with ``p0`` open at term 1, is reached through ``RemoteStreamingNodes``
(its real ``Produce`` server on loopback) and through ``LocalStreamingNode`` (its WALs in this
process). Either appends in order, refuses a stale term and a pchannel not open with the same
codes (what the producer retries on), and says whether a retry must copy the messages.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pyarrow as pa
import pytest

from common.errors import ErrorCode, NotReady, StrataError
from common.message import Insert, Outgoing
from streamingnode.client.local import LocalStreamingNode
from streamingnode.client.nodes import StreamingNodes
from streamingnode.client.remote import RemoteStreamingNodes
from streamingnode.walmanager.manager import WALManager

pytestmark = pytest.mark.timeout(30)


class _NoMoves:
    async def resolve(self, pchannel: str, *, newer_than_term: int = 0, timeout: float = 30.0) -> tuple[str, int]:
        raise NotReady("no move in this test")

    async def report_error(self, pchannel: str, term: int, error: str) -> None:
        pass


def _insert(first: int) -> Outgoing:
    table = pa.table({"id": pa.array(range(first, first + 2), pa.int64())})
    return Outgoing.of(Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=table))


@pytest.fixture(params=["remote", "local"])
async def nodes(request: pytest.FixtureRequest, served: tuple[WALManager, str]) -> AsyncIterator[tuple[StreamingNodes, str]]:
    manager, address = served
    impl: StreamingNodes = RemoteStreamingNodes() if request.param == "remote" else LocalStreamingNode(address, manager)
    try:
        yield impl, address
    finally:
        await impl.close()


async def test_an_appender_appends_in_order(nodes: tuple[StreamingNodes, str]) -> None:
    impl, address = nodes
    appender = impl.open("p0", address, 1, _NoMoves())
    try:
        results = await appender.append([_insert(0), _insert(2)], timeout=10, txn=False)
        assert len(results) == 2 and results[0].timetick <= results[1].timetick
        assert appender.usable() and (appender.address, appender.term) == (address, 1)
    finally:
        await appender.close()


@pytest.mark.parametrize(("pchannel", "term", "code"), [
    ("p0", 7, ErrorCode.UNMATCHED_CHANNEL_TERM),
    ("p9", 1, ErrorCode.CHANNEL_NOT_EXIST),
])
async def test_a_refused_append_has_the_same_code_either_way(
    nodes: tuple[StreamingNodes, str], pchannel: str, term: int, code: ErrorCode
) -> None:
    impl, address = nodes
    appender = impl.open(pchannel, address, term, _NoMoves())
    try:
        with pytest.raises(StrataError) as info:
            await appender.append([_insert(0)], timeout=10, txn=False)
        assert info.value.code == code
    finally:
        await appender.close()


async def test_only_the_in_process_appender_keeps_the_messages(nodes: tuple[StreamingNodes, str]) -> None:
    impl, address = nodes
    appender = impl.open("p0", address, 1, _NoMoves())
    try:
        assert appender.takes_messages is isinstance(impl, LocalStreamingNode)
    finally:
        await appender.close()
