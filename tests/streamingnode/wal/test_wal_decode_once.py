"""The WAL decodes an envelope once where it enters, a producer's typed message never, and the
messages it makes itself not at all.

With upb every read of ``msg.body`` copies the body, and decoding an Insert reads it: a second
decode on the write path copies a 512 KiB body again. ``WAL.append`` decodes an append once;
``WAL.append_typed`` (the producer of this process) takes the typed forms as they are; the shard
interceptor and the row counts (an observer) read those typed forms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from common.message import Insert, ManualFlush, Outgoing
from protos.common_pb2 import Message, MessageType
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.wal import WAL
from tests.streamingnode.decodes import count_decodes
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.collection import create_collection
from tests.streamingnode.wal.opened import local_wal

pytestmark = pytest.mark.timeout(30)


@pytest.fixture()
def decodes(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    return count_decodes(monkeypatch)


@pytest.fixture(params=["shard", "no-interceptor"])
async def wal(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[WAL]:
    links = [ShardInterceptor(ShardManager(SealPolicy()), CountingAllocator(500))] if request.param == "shard" else []
    async with local_wal(tmp_path, CountingAllocator(1000), tick_interval=0.05, interceptors=links) as w:
        yield w


def _typed_insert(rows: int, dim: int) -> Insert:
    vectors = np.random.default_rng(0).random((rows, dim), dtype=np.float32)
    table = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
        }
    )
    return Insert.of(vchannel="v0", collection_id=7, partition_id=8, table=table)


def _insert(rows: int, dim: int) -> Message:
    return _typed_insert(rows, dim).encode()


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


async def test_a_typed_append_is_never_decoded(wal: WAL, decodes: Counter[int]) -> None:
    await wal.append([create_collection("v0", 7)])
    decodes.clear()
    await wal.append_typed([Outgoing.of(_typed_insert(1000, 128))])  # as the proxy of this process appends
    (flushed,) = await wal.append_typed([Outgoing.of(ManualFlush(vchannel="v0", collection_id=7, flush_ts=1))])
    assert dict(decodes) == {}
    assert wal.collection_rows(7) == 1000  # the row counts read the typed Insert
    assert len(flushed.sealed_segment_ids) == (1 if wal._shard is not None else 0)
