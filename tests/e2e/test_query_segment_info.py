"""GetQuerySegmentInfo and LoadBalance as Milvus 2.6 answers them, through pymilvus, against the session's standalone.

``list_loaded_segments`` (GetQuerySegmentInfo) lists the sealed segments the
query node serves: the flushed ones, with their rows, partition, level, the
node holding them and the vector index they are searched through; growing
rows are not listed (Milvus lists sealed segments only), a released
collection has none, an unknown one is "collection not found". On a
standalone ``load_balance`` has nothing to move (the replica has one node):
it succeeds for that node, and refuses, with Milvus's texts, a node outside
the replica, a segment not on the source node, and a collection not loaded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from tests.e2e.util import unique_name

ROWS = 300
T = TypeVar("T")


def _eventually(probe: Callable[[], T | None], timeout: float = 60.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.2)


def _flushed(milvus: MilvusClient) -> str:
    """A loaded collection whose rows are flushed into sealed segments."""
    name = unique_name("qsi")
    milvus.create_collection(name, dimension=4, consistency_level="Strong")
    milvus.insert(name, [{"id": i, "vector": [float(i), 1.0, 0.0, 0.0]} for i in range(ROWS)])
    milvus.flush(name)
    return name


def _node(milvus: MilvusClient, name: str) -> int:
    [replica] = milvus.describe_replica(name)
    [node] = replica.group_nodes
    return int(node)


def test_the_sealed_segments_served_are_listed_with_their_node_and_index(milvus: MilvusClient) -> None:
    name = _flushed(milvus)
    persistent = {s.segment_id: s.num_rows for s in milvus.list_persistent_segments(name)}
    assert sum(persistent.values()) == ROWS

    def served() -> list | None:
        infos = milvus.list_loaded_segments(name)
        done = {i.segment_id for i in infos} == set(persistent) and all(i.index_name for i in infos)
        return infos if done else None

    infos = _eventually(served)
    stub = milvus._get_connection()._stub
    desc = stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(collection_name=name), timeout=10)
    parts = stub.ShowPartitions(milvus_pb2.ShowPartitionsRequest(collection_name=name), timeout=10)
    [index] = stub.DescribeIndex(milvus_pb2.DescribeIndexRequest(collection_name=name), timeout=10).index_descriptions
    node = _node(milvus, name)
    for info in infos:
        assert info.collection_id == desc.collectionID
        assert info.partition_id == parts.partitionIDs[0]
        assert info.num_rows == persistent[info.segment_id]
        assert info.state == common_pb2.Sealed
        assert info.level == common_pb2.L1
        assert info.node_ids == [node]
        assert (info.index_name, info.index_id) == (index.index_name, index.indexID) == ("vector", index.indexID)
        assert info.mem_size == 0  # not filled, as in Milvus

    # Rows inserted since are growing: served, but not listed.
    milvus.insert(name, [{"id": i, "vector": [float(i), 0.0, 1.0, 0.0]} for i in range(ROWS, ROWS + 20)])
    assert milvus.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"] == ROWS + 20
    assert {i.segment_id for i in milvus.list_loaded_segments(name)} == set(persistent)


def test_a_released_collection_has_no_segments_and_an_unknown_one_is_not_found(milvus: MilvusClient) -> None:
    name = _flushed(milvus)
    _eventually(lambda: milvus.list_loaded_segments(name) or None)
    milvus.release_collection(name)
    assert milvus.list_loaded_segments(name) == []
    with pytest.raises(MilvusException) as err:
        milvus.list_loaded_segments("no_such_collection")
    assert err.value.code == 100
    assert err.value.message == "collection not found[database=default][collection=no_such_collection]"


def _load_balance(milvus: MilvusClient, name: str, src: int, dst: list[int], segments: list[int]) -> None:
    milvus._get_connection().load_balance(name, src, dst, segments)


def test_load_balance_on_a_standalone_has_nothing_to_move_and_checks_as_milvus(milvus: MilvusClient) -> None:
    name = _flushed(milvus)
    [segment] = _eventually(lambda: milvus.list_loaded_segments(name) or None)
    node = _node(milvus, name)
    cid = segment.collection_id

    _load_balance(milvus, name, node, [], [])  # the replica's only node: nothing to move
    _load_balance(milvus, name, node, [node], [segment.segment_id])  # to itself: nothing to move
    assert [s.segment_id for s in milvus.list_loaded_segments(name)] == [segment.segment_id]

    cases = [
        ((node + 1000, [], []), 901,
         f"source node not found in any replica of collection {cid}: node not found[node={node + 1000}]"),
        ((node, [node + 1000], []), 901,
         f"destination node not found in the same replica: node not found[node={node + 1000}]"),
        ((node, [], [segment.segment_id + 1000]), 65535,
         f"failed to balance segments: segment {segment.segment_id + 1000} not found in source node {node}"),
    ]
    for args, code, message in cases:
        with pytest.raises(MilvusException) as err:
            _load_balance(milvus, name, *args)
        assert (err.value.code, err.value.message) == (code, message)

    milvus.release_collection(name)
    with pytest.raises(MilvusException) as err:
        _load_balance(milvus, name, node, [], [])
    assert (err.value.code, err.value.message) == (103, f"collection not fully loaded[collection={cid}]")
    with pytest.raises(MilvusException) as err:
        _load_balance(milvus, "no_such_collection", node, [], [])
    assert err.value.code == 100
