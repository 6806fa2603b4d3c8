"""FlushAll and GetFlushAllState as Milvus 2.6 answers them, through pymilvus, against the session's standalone.

``flush_all`` returns once everything written before it is in object storage:
the growing rows of every collection are then in flushed segments.
``GetFlushAllState`` is false while rows written before its timestamp are
still growing and true once FlushAll has flushed them, per collection in
``flush_states``; a timestamp before any collection existed is flushed at
once. A database that does not exist is "database not found".
"""

from __future__ import annotations

import time

import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from tests.e2e.util import unique_name

ROWS = 100


def _with_growing_rows(milvus: MilvusClient) -> str:
    name = unique_name("fa")
    milvus.create_collection(name, dimension=4)
    milvus.insert(name, [{"id": i, "vector": [float(i), 1.0, 0.0, 0.0]} for i in range(ROWS)])
    return name


def _flushed_rows(milvus: MilvusClient, name: str) -> int:
    return sum(s.num_rows for s in milvus.list_persistent_segments(name) if s.state == common_pb2.Flushed)


def test_flush_all_flushes_the_growing_rows_of_every_collection(milvus: MilvusClient) -> None:
    names = [_with_growing_rows(milvus) for _ in range(2)]
    assert [_flushed_rows(milvus, n) for n in names] == [0, 0]
    milvus.flush_all(timeout=120)
    assert [_flushed_rows(milvus, n) for n in names] == [ROWS, ROWS]


def test_flush_all_state_waits_for_the_rows_written_before_it(milvus: MilvusClient) -> None:
    name = _with_growing_rows(milvus)
    stub = milvus._get_connection()._stub
    before = stub.AllocTimestamp(milvus_pb2.AllocTimestampRequest(), timeout=10).timestamp
    state = stub.GetFlushAllState(milvus_pb2.GetFlushAllStateRequest(flush_all_ts=before), timeout=10)
    assert state.status.code == 0 and not state.flushed  # the rows are growing, nothing flushed them
    [db] = state.flush_states
    assert db.db_name == "default" and db.collection_flush_states[name] is False

    flush = stub.FlushAll(milvus_pb2.FlushAllRequest(), timeout=60)
    assert flush.status.code == 0 and flush.flush_all_ts > before
    [result] = flush.flush_results
    flushed = {c.collection_name: c for c in result.collection_results}
    assert result.db_name == "default" and flushed[name].flush_ts > flush.flush_all_ts

    deadline = time.monotonic() + 60
    while not (state := stub.GetFlushAllState(milvus_pb2.GetFlushAllStateRequest(flush_all_ts=before))).flushed:
        assert time.monotonic() < deadline, "flush all did not complete"
        time.sleep(0.2)
    assert state.flush_states[0].collection_flush_states[name] is True
    assert _flushed_rows(milvus, name) == ROWS

    # Nothing was written before timestamp 1: every collection was created after it.
    early = stub.GetFlushAllState(milvus_pb2.GetFlushAllStateRequest(flush_all_ts=1), timeout=10)
    assert early.flushed and dict(early.flush_states[0].collection_flush_states) == {}


def test_another_database_is_not_found(milvus: MilvusClient) -> None:
    stub = milvus._get_connection()._stub
    for call in (
        lambda: stub.FlushAll(milvus_pb2.FlushAllRequest(db_name="nodb"), timeout=10),
        lambda: stub.GetFlushAllState(milvus_pb2.GetFlushAllStateRequest(db_name="nodb", flush_all_ts=1), timeout=10),
        lambda: stub.FlushAll(
            milvus_pb2.FlushAllRequest(flush_targets=[milvus_pb2.FlushAllTarget(db_name="nodb")]), timeout=10
        ),
    ):
        status = call().status
        assert (status.code, status.reason) == (800, "database not found[database=nodb]")
    with pytest.raises(MilvusException, match="database not found"):
        milvus.flush_all(db="nodb")
