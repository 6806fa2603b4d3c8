"""The proxy's per-request limits, with Milvus's defaults, through pymilvus: each request over one
is refused quickly, with Milvus's code and message, and the server keeps serving.

* ``proxy.grpc.serverMaxRecvSize`` (64 MiB): gRPC itself refuses a larger
  request with RESOURCE_EXHAUSTED, which pymilvus raises as it is (as Milvus's does);
* ``quotaAndLimits.limits.nq`` and ``.topK`` (16,384): code 1100;
* ``quotaAndLimits.limits.maxOutputSize`` (100 MiB): a search whose hits cannot
  fit is refused before it runs, code 65535 (before, nq=16,384 x topk=16,384 ran
  for minutes);
* ``proxy.max_expr_length`` (16 MiB, Strata's own): code 1100.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import unique_name
from tests.harness import Standalone

pytestmark = pytest.mark.timeout(180)

DIM = 4
ROWS = 1000
QUICK = 20.0  # seconds: a refusal comes long before this (a request that runs instead times out)


@pytest.fixture(scope="module")
def coll(standalone: Standalone) -> Iterator[str]:
    client = MilvusClient(standalone.uri)
    name = unique_name("limits")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    params = client.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=params)
    vectors = np.random.default_rng(0).random((ROWS, DIM), dtype=np.float32)
    client.insert(name, [{"id": i, "v": vectors[i].tolist()} for i in range(ROWS)])
    client.close()
    try:
        yield name
    finally:
        cleanup = MilvusClient(standalone.uri)
        cleanup.drop_collection(name)
        cleanup.close()


@pytest.fixture()
def client(standalone: Standalone, coll: str) -> Iterator[MilvusClient]:
    c = MilvusClient(standalone.uri)
    try:
        yield c
        # Whatever was refused, the server still answers.
        assert c.query(coll, filter="id == 7", output_fields=["id"], consistency_level="Strong") == [{"id": 7}]
    finally:
        c.close()


def test_a_request_over_server_max_recv_size_is_refused_by_grpc(client: MilvusClient, coll: str) -> None:
    huge = "id in [" + "1, " * (23 << 20) + "2]"  # 69 MB of filter: over 64 MiB
    started = time.perf_counter()
    with pytest.raises(grpc.RpcError) as info:
        client.query(coll, filter=huge, limit=1, timeout=QUICK)
    assert info.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert "larger than max" in info.value.details()  # type: ignore[attr-defined]
    assert time.perf_counter() - started < QUICK


def test_too_many_query_vectors_are_refused(client: MilvusClient, coll: str) -> None:
    with pytest.raises(MilvusException) as info:
        client.search(coll, data=np.zeros((16_385, DIM), np.float32), limit=1, timeout=QUICK)
    assert info.value.code == 1100
    assert info.value.message == (
        "nq [16385] is invalid, nq (number of search vector per search request) "
        "should be in range [1, 16384], but got 16385"
    )


def test_a_topk_over_the_limit_is_refused(client: MilvusClient, coll: str) -> None:
    with pytest.raises(MilvusException) as info:
        client.search(coll, data=np.zeros((1, DIM), np.float32), limit=16_385, timeout=QUICK)
    assert info.value.code == 1100
    assert info.value.message == "topk [16385] is invalid, it should be in range [1, 16384], but got 16385"


def test_a_search_whose_results_cannot_fit_is_refused_before_it_runs(client: MilvusClient, coll: str) -> None:
    """16,384 queries x 1,000 rows each = 16.4 M hits of at least 12 bytes: over 100 MiB."""
    queries = np.random.default_rng(1).random((16_384, DIM), dtype=np.float32)
    started = time.perf_counter()
    with pytest.raises(MilvusException) as info:
        client.search(coll, data=queries, limit=16_384, timeout=QUICK)
    assert info.value.code == 65535
    assert info.value.message == "search results exceed the maxOutputSize Limit 104857600"
    assert time.perf_counter() - started < QUICK
    # Within the limit the search runs.
    hits = client.search(coll, data=queries[:1024], limit=500, timeout=60)
    assert len(hits) == 1024 and all(len(h) == 500 for h in hits)


def test_an_expression_over_max_expr_length_is_refused_before_it_is_parsed(client: MilvusClient, coll: str) -> None:
    long = "id in [" + "1, " * (6 << 20) + "2]"  # 18.9 M characters: over 16 Mi, under 64 MiB
    started = time.perf_counter()
    with pytest.raises(MilvusException) as info:
        client.query(coll, filter=long, limit=1, timeout=QUICK)
    assert info.value.code == 1100
    assert f"the filter expression is {len(long)} characters long, more than the 16777216" in info.value.message
    assert time.perf_counter() - started < QUICK
