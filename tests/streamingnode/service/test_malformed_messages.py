"""A producer that sends a message Strata cannot read hears INVALID_ARGUMENT, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from common.errors import ErrorCode
from common.grpcutil import internal_channel
from common.message import Insert, decode
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy, MessageID
from tests.streamingnode.served import served_wal

pytestmark = pytest.mark.timeout(30)


async def test_a_malformed_message_is_refused_and_the_node_keeps_writing(tmp_path: Path) -> None:
    good = Insert.of(vchannel="v0", collection_id=1, partition_id=2, table=pa.table({"id": pa.array([1], pa.int64())}))
    no_rows = common_pb2.Message(
        type=common_pb2.INSERT, vchannel="v0", header=b'{"collection_id": 1, "partition_id": 2}'
    )
    unknown = common_pb2.Message(type=common_pb2.IMPORT, vchannel="v0", header=b"{}")
    async with served_wal(tmp_path / "wal", "p0", 3) as (manager, address):
        channel = internal_channel(address)
        try:
            stub = streaming_pb2_grpc.StreamingNodeHandlerStub(channel)
            call = stub.Produce()
            for i, msg in enumerate([no_rows, unknown, good.encode()], start=1):
                await call.write(streaming_pb2.ProduceRequest(request_id=i, pchannel="p0", term=3, messages=[msg]))
            answers = sorted([await call.read() for _ in range(3)], key=lambda r: r.request_id)
            await call.done_writing()
        finally:
            await channel.close()
        assert [r.status.code for r in answers] == [
            ErrorCode.INVALID_ARGUMENT,
            ErrorCode.INVALID_ARGUMENT,
            ErrorCode.OK,
        ]
        assert "INSERT message on vchannel 'v0': header key 'rows' is missing" in answers[0].status.reason
        assert "type 11 (IMPORT), which Strata does not read" in answers[1].status.reason
        # Only the good Insert is in the log.
        wal = manager.get("p0", 3)
        written = [decode(m) for _, m in await _persisted(wal)]
        assert [type(m) for m in written] == [Insert]
        assert wal.collection_rows(1) == 1


async def _persisted(wal: WAL) -> list[tuple[MessageID, common_pb2.Message]]:
    """Every message in ``wal``'s log but the TimeTicks."""
    out = []
    last = wal.impl.last_message_id()
    async for mid, msg in wal.read(DeliverPolicy.all()):
        if msg.type != common_pb2.TIME_TICK:
            out.append((mid, msg))
        if last is not None and mid >= last:
            break
    return out
