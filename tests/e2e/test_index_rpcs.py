"""The index RPCs answer as Milvus 2.6 does: state and row counts, properties, and Milvus' errors.

pymilvus 2.6 reads an index's state and progress from ``DescribeIndex``
(``describe_index``, ``utility.index_building_progress``,
``utility.wait_for_index_building_complete``); the older ``GetIndexState``,
``GetIndexBuildProgress`` and ``GetIndexStatistics`` (which other SDKs still
call) are driven over pymilvus' own generated stubs. Messages and codes are
Milvus' (``index not found[indexName=...]`` 700, ``index duplicates`` 702,
``collection already loaded`` 104; checked against Milvus 2.3.5 where it has
them, against Milvus 2.6's own client tests for ``alter_index_properties``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import grpc
import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException, connections, utility
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc

from tests.e2e.util import unique_name
from tests.harness import Standalone

ROWS, DIM = 1500, 8  # over 1,024 rows: the flushed segment needs a built index


@pytest.fixture()
def stub(standalone: Standalone) -> Iterator[milvus_pb2_grpc.MilvusServiceStub]:
    with grpc.insecure_channel(standalone.uri.removeprefix("http://")) as channel:
        yield milvus_pb2_grpc.MilvusServiceStub(channel)


@pytest.fixture()
def orm(standalone: Standalone) -> Iterator[str]:
    alias = unique_name("orm")
    connections.connect(alias, uri=standalone.uri)
    try:
        yield alias
    finally:
        connections.disconnect(alias)


def _collection(client: MilvusClient, fields: tuple[str, ...] = ("v",), rows: int = 0) -> str:
    name = unique_name("idx")
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    for field in fields:
        schema.add_field(field, DataType.FLOAT_VECTOR, dim=DIM)
    client.create_collection(name, schema=schema)
    if rows:
        vecs = np.random.default_rng(27).standard_normal((rows, DIM)).astype(np.float32)
        client.insert(name, [{"id": i, **{f: vecs[i].tolist() for f in fields}} for i in range(rows)])
        client.flush(name)
    return name


def _index(client: MilvusClient, name: str, field: str, index_name: str, kind: str = "IVF_FLAT") -> None:
    params = client.prepare_index_params()
    params.add_index(field, index_type=kind, metric_type="L2", params={"nlist": 16} if kind == "IVF_FLAT" else {},
                     index_name=index_name)
    client.create_index(name, params, timeout=90)


def _status(resp: Any) -> common_pb2.Status:
    return resp if isinstance(resp, common_pb2.Status) else resp.status


def _error(resp: Any) -> tuple[int, str]:
    status = _status(resp)
    return status.code, status.reason


@pytest.mark.timeout(180)
def test_a_built_index_reads_finished_with_every_row_through_each_rpc(
    milvus: MilvusClient, stub: milvus_pb2_grpc.MilvusServiceStub, orm: str
) -> None:
    name = _collection(milvus, rows=ROWS)
    try:
        _index(milvus, name, "v", "v_idx")  # waits for Finished
        desc = milvus.describe_index(name, "v_idx")
        assert desc["state"] == "Finished", desc
        assert (desc["indexed_rows"], desc["total_rows"], desc["pending_index_rows"]) == (ROWS, ROWS, 0)
        assert (desc["index_type"], desc["metric_type"], desc["nlist"]) == ("IVF_FLAT", "L2", "16")

        for index_name in ("v_idx", ""):  # no name: the collection's only index
            state = stub.GetIndexState(milvus_pb2.GetIndexStateRequest(collection_name=name, index_name=index_name))
            assert _error(state) == (0, "")
            assert (state.state, state.fail_reason) == (common_pb2.Finished, "")
            progress = stub.GetIndexBuildProgress(
                milvus_pb2.GetIndexBuildProgressRequest(collection_name=name, index_name=index_name)
            )
            assert (_error(progress), progress.indexed_rows, progress.total_rows) == ((0, ""), ROWS, ROWS)
        stats = stub.GetIndexStatistics(milvus_pb2.GetIndexStatisticsRequest(collection_name=name))
        assert _error(stats) == (0, "")
        [described] = stats.index_descriptions
        assert (described.index_name, described.field_name, described.state) == ("v_idx", "v", common_pb2.Finished)
        assert (described.indexed_rows, described.total_rows, described.pending_index_rows) == (ROWS, ROWS, 0)

        assert utility.index_building_progress(name, "v_idx", using=orm) == {
            "total_rows": ROWS, "indexed_rows": ROWS, "pending_index_rows": 0, "state": "Finished",
        }
        assert utility.wait_for_index_building_complete(name, "v_idx", timeout=30, using=orm) is True
    finally:
        milvus.drop_collection(name)


def test_unknown_and_ambiguous_index_names_get_milvus_errors(
    milvus: MilvusClient, stub: milvus_pb2_grpc.MilvusServiceStub, orm: str
) -> None:
    bare = _collection(milvus)
    name = _collection(milvus, fields=("a", "b"))
    try:
        _index(milvus, name, "a", "a_idx", kind="FLAT")
        _index(milvus, name, "b", "b_idx", kind="FLAT")
        not_found = (700, "index not found[indexName=nope]")
        duplicates = (702, "index duplicates[indexName=]")

        assert _error(stub.DescribeIndex(milvus_pb2.DescribeIndexRequest(collection_name=name, index_name="nope"))) \
            == not_found
        assert _error(stub.DescribeIndex(milvus_pb2.DescribeIndexRequest(collection_name=bare))) == (
            700, f"index not found[collection={bare}]"
        )
        # Milvus names an index by its name only: a field name does not narrow the answer.
        both = stub.DescribeIndex(milvus_pb2.DescribeIndexRequest(collection_name=name, field_name="a"))
        assert sorted(d.index_name for d in both.index_descriptions) == ["a_idx", "b_idx"]

        for rpc, request in (
            ("GetIndexState", milvus_pb2.GetIndexStateRequest),
            ("GetIndexBuildProgress", milvus_pb2.GetIndexBuildProgressRequest),
        ):
            call = getattr(stub, rpc)
            assert _error(call(request(collection_name=name, index_name="nope"))) == not_found, rpc
            assert _error(call(request(collection_name=name))) == duplicates, rpc
            assert _error(call(request(collection_name=name, field_name="a"))) == duplicates, rpc
            assert _error(call(request(collection_name=unique_name("missing"), index_name="a_idx")))[0] == 100, rpc
        assert _error(stub.GetIndexStatistics(
            milvus_pb2.GetIndexStatisticsRequest(collection_name=name, index_name="nope"))) == not_found
        assert _error(stub.GetIndexStatistics(milvus_pb2.GetIndexStatisticsRequest(collection_name=bare))) == (
            700, "index not found[indexName=]"
        )
        stats = stub.GetIndexStatistics(milvus_pb2.GetIndexStatisticsRequest(collection_name=name))
        assert sorted(d.index_name for d in stats.index_descriptions) == ["a_idx", "b_idx"]

        with pytest.raises(MilvusException) as err:
            utility.index_building_progress(name, "nope", using=orm)
        assert (err.value.code, err.value.message) == not_found

        # Dropping: a name that matches nothing drops nothing; no name is ambiguous with two indexes.
        assert _error(stub.DropIndex(milvus_pb2.DropIndexRequest(collection_name=name, index_name="nope"))) == (0, "")
        assert _error(stub.DropIndex(milvus_pb2.DropIndexRequest(collection_name=name, field_name="a"))) == duplicates
        assert sorted(milvus.list_indexes(name)) == ["a_idx", "b_idx"]
        milvus.drop_index(name, "a_idx")
        assert milvus.list_indexes(name) == ["b_idx"]
    finally:
        milvus.drop_collection(name)
        milvus.drop_collection(bare)


def test_alter_and_drop_index_properties_on_a_released_collection(
    milvus: MilvusClient, stub: milvus_pb2_grpc.MilvusServiceStub
) -> None:
    name = _collection(milvus, rows=10)
    try:
        _index(milvus, name, "v", "v_idx")
        before = milvus.describe_index(name, "v_idx")
        assert "mmap.enabled" not in before

        milvus.alter_index_properties(name, "v_idx", properties={"mmap.enabled": True})
        altered = milvus.describe_index(name, "v_idx")
        assert altered == {**before, "mmap.enabled": "True"}
        _index(milvus, name, "v", "v_idx")  # the same index again: a no-op that keeps the property
        assert milvus.describe_index(name, "v_idx") == altered
        milvus.drop_index_properties(name, "v_idx", property_keys=["mmap.enabled"])
        assert milvus.describe_index(name, "v_idx") == before

        kv = common_pb2.KeyValuePair
        refusals: list[tuple[Any, tuple[int, str]]] = [
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="v_idx",
                                          extra_params=[kv(key="index_type", value="HNSW")]),
             (1100, "index_type is not a configable index property: invalid parameter")),
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="v_idx",
                                          extra_params=[kv(key="metric_type", value="IP")]),
             (1100, "metric_type is not a configable index property: invalid parameter")),
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="v_idx", delete_keys=["nlist"]),
             (1100, "nlist is not a configable index property: invalid parameter")),
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="v_idx",
                                          extra_params=[kv(key="mmap.enabled", value="maybe")]),
             (1100, "invalid mmap.enabled value: maybe, expected: true, false")),
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="nope",
                                          extra_params=[kv(key="mmap.enabled", value="true")]),
             (700, "index not found[indexName=nope]")),
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="",
                                          extra_params=[kv(key="mmap.enabled", value="true")]),
             (1100, "index name is empty: invalid parameter")),
            (milvus_pb2.AlterIndexRequest(collection_name=name, index_name="v_idx", delete_keys=["mmap.enabled"],
                                          extra_params=[kv(key="mmap.enabled", value="true")]),
             (1100, "cannot provide both DeleteKeys and ExtraParams: invalid parameter")),
        ]
        for request, expected in refusals:
            assert _error(stub.AlterIndex(request)) == expected, request
        with pytest.raises(MilvusException) as err:  # nor at creation
            bad = milvus.prepare_index_params()
            bad.add_index("v", index_type="IVF_FLAT", metric_type="L2", params={"nlist": 16, "mmap.enabled": "maybe"},
                          index_name="v_idx")
            milvus.create_index(name, bad)
        assert (err.value.code, err.value.message) == (1100, "invalid mmap.enabled value: maybe, expected: true, false")
        assert milvus.describe_index(name, "v_idx") == before

        # Loaded: Milvus changes an index of a released collection only.
        milvus.load_collection(name)
        loaded = (104, "can't alter index on loaded collection, please release the collection first: "
                       f"collection already loaded[collection={name}]")
        with pytest.raises(MilvusException) as err:
            milvus.alter_index_properties(name, "v_idx", properties={"mmap.enabled": True})
        assert (err.value.code, err.value.message) == loaded
        with pytest.raises(MilvusException) as err:
            milvus.drop_index_properties(name, "v_idx", property_keys=["mmap.enabled"])
        assert (err.value.code, err.value.message) == loaded
        with pytest.raises(MilvusException) as err:
            milvus.drop_index(name, "v_idx")
        assert (err.value.code, err.value.message) == (
            65535, "index cannot be dropped, collection is loaded, please release it first"
        )
        assert milvus.describe_index(name, "v_idx") == before
        milvus.release_collection(name)
        milvus.drop_index(name, "v_idx")
        assert milvus.list_indexes(name) == []
    finally:
        milvus.drop_collection(name)


def test_an_index_the_query_nodes_cannot_build_reads_failed_with_their_reason(
    milvus: MilvusClient, stub: milvus_pb2_grpc.MilvusServiceStub, orm: str, standalone: Standalone
) -> None:
    """An index definition the proxy would refuse (HNSW with M=0), written through the coordinator's own
    API as a catalog of an older proxy could hold it: the query node refuses the build, and the index
    reads Failed with the node's reason, as Milvus reports a failed index task."""
    import asyncio

    from common.coordclient import read_leader
    from common.etcd.metastore import MetaStore
    from protos import coordinator_pb2, coordinator_pb2_grpc

    name = _collection(milvus, rows=ROWS)
    try:
        ready = [line for line in standalone.log_path.read_text().splitlines() if "etcd ready" in line]
        endpoint = re.findall(r"endpoint='([^']+)'", ready[-1])[0]

        async def create_bad_index() -> None:
            store = await MetaStore.connect(endpoint)
            try:
                leader = await read_leader(store)
            finally:
                await store.close()
            assert leader is not None
            async with grpc.aio.insecure_channel(leader.address) as channel:
                resp = await coordinator_pb2_grpc.CoordinatorStub(channel).CreateIndex(
                    coordinator_pb2.CreateIndexRequest(
                        collection=coordinator_pb2.CollectionRef(name=name),
                        index=coordinator_pb2.IndexInfo(
                            field_name="v", index_name="bad", params={"index_type": "HNSW", "metric_type": "L2", "M": "0"}
                        ),
                    ),
                    timeout=30,
                )
            assert resp.status.code == 0, resp.status

        asyncio.run(create_bad_index())
        # Returns once the index is Finished or Failed (before, it waited until its timeout).
        assert utility.wait_for_index_building_complete(name, "bad", timeout=60, using=orm) is False
        desc = stub.DescribeIndex(milvus_pb2.DescribeIndexRequest(collection_name=name, index_name="bad"))
        [described] = desc.index_descriptions
        assert described.state == common_pb2.Failed
        assert re.fullmatch(r"\d+: invalid index params: M must be in \[2, 2048\], got 0;",
                            described.index_state_fail_reason), described.index_state_fail_reason
        assert (described.indexed_rows, described.total_rows, described.pending_index_rows) == (0, ROWS, ROWS)
        state = stub.GetIndexState(milvus_pb2.GetIndexStateRequest(collection_name=name, index_name="bad"))
        assert (state.state, state.fail_reason) == (common_pb2.Failed, described.index_state_fail_reason)
    finally:
        milvus.drop_collection(name)
