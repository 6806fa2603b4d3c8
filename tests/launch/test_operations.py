"""The operations port of a real standalone: metrics move by what was done, health, access log, log level.

One standalone for the module, with authorization on (so a refused login reaches the access log),
JSON logs (``STRATA_LOG_FORMAT=json``), the access log on (``proxy.accessLog.enable``) and every
request kept as slow (threshold 0 ms), driven by the
real pymilvus client and plain HTTP to the RESTful API.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pymilvus import MilvusClient, MilvusException

from tests.cluster.harness import wait_until
from tests.e2e.authutil import auth_standalone
from tests.e2e.restutil import post_raw
from tests.harness import Standalone
from tests.ops import http, ops_url, scrape, total

PASSWORD = "Milvus"
DIM = 8
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    with auth_standalone(tmp_path_factory.mktemp("ops") / "data", env={"STRATA_LOG_FORMAT": "json",
                                                                           "STRATA_PROXY_SLOW_REQUEST_MS": "0",
                                                                           "STRATA_PROXY_ACCESSLOG_ENABLE": "true"}) as s:
        yield s


def _log(s: Standalone, role: str) -> str:
    return (s.data_dir / "logs" / f"{role}.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def base(node: Standalone) -> str:
    return ops_url(_log(node, "standalone-node"))


@pytest.fixture()
def client(node: Standalone) -> Iterator[MilvusClient]:
    c = MilvusClient(node.uri, token=f"root:{PASSWORD}")
    try:
        yield c
    finally:
        c.close()


def _access_lines(s: Standalone) -> list[dict[str, Any]]:
    out = []
    for line in _log(s, "standalone-node").splitlines():
        if '"event": "access"' in line:
            out.append(json.loads(line))
    return out


def test_counters_move_by_the_rows_and_vectors_of_each_request(client: MilvusClient, base: str) -> None:
    name = f"ops_{uuid.uuid4().hex[:8]}"
    client.create_collection(name, dimension=DIM)
    before = scrape(base)
    rows = [{"id": i, "vector": [random.random() for _ in range(DIM)]} for i in range(7)]
    client.insert(name, rows)
    client.delete(name, ids=[0, 1])
    client.search(name, data=[[random.random() for _ in range(DIM)] for _ in range(3)], limit=2)
    after = scrape(base)

    def moved(metric: str, **labels: str) -> float:
        return total(after, metric, **labels) - total(before, metric, **labels)

    assert moved("milvus_proxy_insert_vectors_count_total", collection_name=name, db_name="default") == 7
    assert moved("milvus_proxy_delete_vectors_count_total", collection_name=name) == 2
    assert moved("milvus_proxy_search_vectors_count_total", collection_name=name) == 3
    assert moved("milvus_proxy_req_count_total", function_name="Insert", status="success") == 1
    assert moved("milvus_proxy_req_count_total", function_name="Search", status="success") == 1
    assert moved("milvus_proxy_req_latency_count", function_name="Search") == 1
    assert moved("strata_proxy_result_bytes_count", function_name="Search") == 1
    # The hits returned: at most limit per query vector, at least one each (5 rows remain).
    assert 3 <= moved("strata_proxy_search_hits_total", collection_name=name) <= 6
    # The same process's streaming and query nodes: the writes went through the WAL, the search
    # through at least one delegator.
    assert moved("milvus_streaming_node_wal_append_message_total") >= 2  # the insert's and the delete's
    assert moved("milvus_streaming_node_wal_append_batch_duration_seconds_count") >= 2
    assert moved("milvus_querynode_sq_req_count_total", query_type="search", status="success") >= 1
    terms = {dict(ls)["channel_name"]: v for (n, ls), v in after.items() if n == "milvus_streaming_node_wal_term"}
    assert terms and all(v >= 1 for v in terms.values())
    assert all(v == 1 for (n, _), v in after.items() if n == "milvus_streaming_node_wal_available")
    assert total(after, "strata_etcd_session_alive", role="streamingnode") == 1


def test_the_coordinator_reports_leadership_segments_and_its_session(node: Standalone, client: MilvusClient) -> None:
    name = f"seg_{uuid.uuid4().hex[:8]}"
    client.create_collection(name, dimension=DIM)
    client.insert(name, [{"id": 1, "vector": [0.1] * DIM}])
    base = ops_url(_log(node, "coordinator"))
    # The flusher registers the new growing segment with the coordinator shortly after the insert.
    wait_until("a growing segment in the coordinator's metrics",
               lambda: total(scrape(base), "milvus_datacoord_segment_num", segment_state="GROWING") >= 1, timeout=60)
    samples = scrape(base)
    assert total(samples, "strata_coordinator_leader") == 1
    assert total(samples, "strata_etcd_session_alive", role="coordinator") == 1


def test_healthz_is_ok_for_both_processes(node: Standalone, base: str) -> None:
    status, body = http(f"{base}/healthz")
    assert (status, body) == (200, "OK\n")
    status, body = http(f"{ops_url(_log(node, 'coordinator'))}/healthz")
    assert (status, body) == (200, "OK\n")
    assert http(f"{base}/nothing")[0] == 404


def test_access_log_has_a_line_for_a_success_and_a_refusal_and_no_secret(node: Standalone) -> None:
    name = f"acc_{uuid.uuid4().hex[:8]}"
    seen = len(_access_lines(node))
    ok = MilvusClient(node.uri, token=f"root:{PASSWORD}")
    try:
        ok.create_collection(name, dimension=DIM)
        ok.insert(name, [{"id": 1, "vector": [0.5] * DIM}])
    finally:
        ok.close()
    secret = f"wrong-{uuid.uuid4().hex}"
    with pytest.raises(MilvusException):
        MilvusClient(node.uri, token=f"root:{secret}").list_collections()
    # The refusal's line is written as the answer leaves: wait for it rather than race it.
    wait_until("the refusal's access line", lambda: any(x["code"] == "UNAUTHENTICATED" for x in _access_lines(node)[seen:]),
               timeout=30)
    lines = _access_lines(node)[seen:]
    inserts = [x for x in lines if x["method"] == "Insert" and x["collection"] == name]
    assert len(inserts) == 1
    assert inserts[0]["status"] == "success" and inserts[0]["code"] == 0 and inserts[0]["db"] == "default"
    assert inserts[0]["peer"].startswith(("ipv4:127.0.0.1:", "ipv6:"))
    assert inserts[0]["latency_ms"] >= 0
    refused = [x for x in lines if x["code"] == "UNAUTHENTICATED"]
    assert refused and all(x["status"] == "fail" for x in refused)
    text = _log(node, "standalone-node")
    assert secret not in text and PASSWORD not in "".join(json.dumps(x) for x in lines)
    assert "0.5, 0.5" not in text  # no vector data


def test_rest_calls_reach_the_access_log_and_the_slow_requests(node: Standalone, base: str) -> None:
    name = f"racc_{uuid.uuid4().hex[:8]}"
    secret = f"wrong-{uuid.uuid4().hex}"
    seen = len(_access_lines(node))
    root = {"Authorization": f"Bearer root:{PASSWORD}"}
    body = json.dumps({"collectionName": name, "dimension": DIM}).encode()
    assert post_raw(node, "collections/create", body, root) == (200, {"code": 0, "data": {}})
    status, refused = post_raw(node, "collections/list", b"{}", {"Authorization": f"Bearer root:{secret}"})
    assert (status, refused["code"]) == (401, 1800)
    status, missing = post_raw(node, "collections/describe", json.dumps({"collectionName": name + "x"}).encode(), root)
    assert status == 200 and missing["code"] == 100
    lines = [x for x in _access_lines(node)[seen:] if x["method"].startswith("/v2/vectordb/")]
    assert [(x["method"], x["status"], x["code"]) for x in lines] == [
        ("/v2/vectordb/collections/create", "success", 0),
        ("/v2/vectordb/collections/list", "fail", 1800),
        ("/v2/vectordb/collections/describe", "fail", 100),
    ]
    assert lines[0]["collection"] == name and lines[0]["db"] == "default" and lines[0]["latency_ms"] >= 0
    assert all(x["peer"].startswith("ipv4:127.0.0.1:") for x in lines)
    assert secret not in _log(node, "standalone-node") and PASSWORD not in "".join(json.dumps(x) for x in lines)
    # The web console's slow requests (threshold 0 here) list the REST calls with the same fields.
    status, text = http(f"{base}/webui/api/slow_requests")
    assert status == 200, text
    kept = {(r["method"], r["collection"], r["code"]) for r in json.loads(text)["requests"]}
    assert {("/v2/vectordb/collections/create", name, "0"), ("/v2/vectordb/collections/list", "", "1800")} <= kept


def test_rest_calls_move_the_request_metrics_as_grpc_calls_do(node: Standalone, base: str) -> None:
    name = f"rmet_{uuid.uuid4().hex[:8]}"
    root = {"Authorization": f"Bearer root:{PASSWORD}"}
    assert post_raw(node, "collections/create", json.dumps({"collectionName": name, "dimension": DIM}).encode(),
                    root)[1]["code"] == 0
    before = scrape(base)
    rows = [{"id": i, "vector": [random.random() for _ in range(DIM)]} for i in range(5)]
    status, answer = post_raw(node, "entities/insert", json.dumps({"collectionName": name, "data": rows}).encode(), root)
    assert (status, answer["code"]) == (200, 0), answer
    after = scrape(base)

    def moved(metric: str, **labels: str) -> float:
        return total(after, metric, **labels) - total(before, metric, **labels)

    # Milvus's REST insert runs the proxy's Insert: the same counters move by the same rows.
    assert moved("milvus_proxy_insert_vectors_count_total", collection_name=name, db_name="default") == 5
    assert moved("milvus_proxy_req_count_total", function_name="Insert", status="success") == 1


def test_log_level_changes_at_runtime(node: Standalone, base: str, client: MilvusClient) -> None:
    assert http(f"{base}/log/level") == (200, "info\n")
    assert http(f"{base}/log/level", method="PUT", body=b"loud")[0] == 400
    assert http(f"{base}/log/level") == (200, "info\n")
    assert http(f"{base}/log/level", method="PUT", body=b'{"level": "warning"}') == (200, "warning\n")
    try:
        seen = len(_access_lines(node))
        client.list_collections()
        assert len(_access_lines(node)) == seen  # an info line: not written at warning
    finally:
        assert http(f"{base}/log/level", method="PUT", body=b"level=info") == (200, "info\n")
    client.list_collections()
    assert [x["method"] for x in _access_lines(node)[seen:]] == ["ShowCollections"]

