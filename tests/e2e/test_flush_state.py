"""GetFlushState as Milvus answers it, through pymilvus's own stub, against the session's standalone.

The Node.js SDK's ``flushSync`` polls ``GetFlushState`` with the segment ids
``Flush`` returned and no collection name: the listed segments alone decide,
and a segment the coordinator no longer knows (compacted away, dropped when
empty) counts as flushed. With a collection name the collection's checkpoints
must also pass ``flush_ts`` (what pymilvus's ``flush()`` asks).
"""

from __future__ import annotations

import time

from pymilvus import MilvusClient
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from tests.e2e.util import unique_name

FLUSH_BOUND_SECONDS = 60.0


def _collection(milvus: MilvusClient, rows: int) -> str:
    name = unique_name("fs")
    milvus.create_collection(name, dimension=4, metric_type="L2", consistency_level="Strong")
    milvus.insert(name, [{"id": i, "vector": [float(i), 0.0, 1.0, 2.0]} for i in range(rows)])
    return name


def _flushed(stub: object, request: milvus_pb2.GetFlushStateRequest) -> milvus_pb2.GetFlushStateResponse:
    deadline = time.monotonic() + FLUSH_BOUND_SECONDS
    while True:
        resp = stub.GetFlushState(request, timeout=10)  # type: ignore[attr-defined]
        assert resp.status.error_code == common_pb2.Success, resp.status.reason
        if resp.flushed or time.monotonic() > deadline:
            return resp
        time.sleep(0.2)


def test_flush_state_by_segment_ids_alone_turns_true_once_they_are_flushed(milvus: MilvusClient) -> None:
    name = _collection(milvus, 300)
    stub = milvus._get_connection()._stub
    flush = stub.Flush(milvus_pb2.FlushRequest(collection_names=[name]), timeout=30)
    assert flush.status.error_code == common_pb2.Success, flush.status.reason
    segments = list(flush.coll_segIDs[name].data)
    assert segments, "the inserted rows are in a growing segment that Flush seals"

    resp = _flushed(stub, milvus_pb2.GetFlushStateRequest(segmentIDs=segments))  # no collection name
    assert resp.flushed

    # Flushed means in object storage: the collection-scoped answer (flush_ts too) agrees.
    by_name = _flushed(
        stub,
        milvus_pb2.GetFlushStateRequest(collection_name=name, segmentIDs=segments, flush_ts=flush.coll_flush_ts[name]),
    )
    assert by_name.flushed
    milvus.load_collection(name)
    assert milvus.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"] == 300


def test_flush_state_of_segments_nobody_knows_is_flushed(milvus: MilvusClient) -> None:
    stub = milvus._get_connection()._stub
    resp = stub.GetFlushState(milvus_pb2.GetFlushStateRequest(segmentIDs=[1, 2, 3]), timeout=10)
    assert (resp.status.error_code, resp.flushed) == (common_pb2.Success, True)
    empty = stub.GetFlushState(milvus_pb2.GetFlushStateRequest(), timeout=10)
    assert (empty.status.error_code, empty.flushed) == (common_pb2.Success, True)


def test_flush_state_of_a_missing_collection_says_it_is_not_found(milvus: MilvusClient) -> None:
    stub = milvus._get_connection()._stub
    name = unique_name("missing")
    resp = stub.GetFlushState(milvus_pb2.GetFlushStateRequest(collection_name=name, segmentIDs=[1]), timeout=10)
    assert resp.status.error_code == common_pb2.CollectionNotExists
    assert not resp.flushed
    assert resp.status.reason == f"collection not found[database=default][collection={name}]"  # Milvus 2.3.5's text
