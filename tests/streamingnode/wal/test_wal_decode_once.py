"""The writer decodes each caller's message once, and the messages it makes itself not at all.

With upb every read of ``msg.body`` copies the body, and decoding an Insert reads it: a second
decode on the write path copies a 512 KiB body again. The interceptor chain decodes an append
once; the shard interceptor and the row counts (an observer) take that typed form.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from common.message import Insert, ManualFlush, TypedMessage, types
from common.message.header import HeaderReader
from protos.common_pb2 import Message, MessageType
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.wal import WAL
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.collection import create_collection
from tests.streamingnode.wal.opened import local_wal

pytestmark = pytest.mark.timeout(30)


@pytest.fixture()
def decodes(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """Decodes per message type, wherever ``common.message.decode`` is called from (every type's
    decoder in its private table is wrapped: the one place all decodes pass)."""
    counts: Counter[int] = Counter()
    for kind, decoder in list(types._DECODERS.items()):

        def counting(
            msg: Message, h: HeaderReader, kind: int = kind, decoder: Callable[[Message, HeaderReader], TypedMessage] = decoder
        ) -> TypedMessage:
            counts[kind] += 1
            return decoder(msg, h)

        monkeypatch.setitem(types._DECODERS, kind, counting)
    return counts


@pytest.fixture(params=["shard", "no-interceptor"])
async def wal(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[WAL]:
    links = [ShardInterceptor(ShardManager(SealPolicy()), CountingAllocator(500))] if request.param == "shard" else []
    async with local_wal(tmp_path, CountingAllocator(1000), tick_interval=0.05, interceptors=links) as w:
        yield w


def _insert(rows: int, dim: int) -> Message:
    vectors = np.random.default_rng(0).random((rows, dim), dtype=np.float32)
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
        }
    )
    return Insert.of(vchannel="v0", collection_id=7, partition_id=8, table=table).encode()


async def test_an_append_is_decoded_once_and_the_wal_s_own_messages_never(wal: WAL, decodes: Counter[int]) -> None:
    await wal.append([create_collection("v0", 7)])

    decodes.clear()
    await wal.append([_insert(1000, 128)])  # a 512 KiB body; with the shard link also a CreateSegment
    assert dict(decodes) == {MessageType.INSERT: 1}

    decodes.clear()
    (flushed,) = await wal.append([ManualFlush(vchannel="v0", collection_id=7, flush_ts=1).encode()])
    assert dict(decodes) == {MessageType.MANUAL_FLUSH: 1}  # with the shard link also a Flush, not decoded

    # What the decode fed is still folded: the row counts, and the segments the ManualFlush sealed.
    assert wal.collection_rows(7) == 1000
    assert len(flushed.sealed_segment_ids) == (1 if wal._shard is not None else 0)
