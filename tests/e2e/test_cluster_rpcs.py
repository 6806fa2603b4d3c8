"""BatchDescribeCollection, GetMetrics, RegisterLink, Dummy and the deprecated calls as Milvus 2.6 answers them.

Through the pymilvus stub against the session's standalone:

* BatchDescribeCollection answers each name and id as DescribeCollection
  does, a missing one with its error status, without failing the batch;
* GetMetrics ``system_info`` (what attu sends) has Milvus's topology shape,
  the proxy's identity, build, deploy mode ``STANDALONE`` and this host's
  CPU count and memory; another type, or none, is Milvus's error;
* its topology lists every role of the standalone (the coordinator as
  rootcoord, querycoord and datacoord, the query and streaming nodes, the
  proxy) with the edges between them, as the cluster's sessions say;
* RegisterLink succeeds with the deploy mode as reason; Dummy runs a
  ``query`` request and answers success, anything else fail;
* CalcDistance, ListIndexedSegment and DescribeSegmentIndexData are
  "service unavailable" (code 2, retriable), as Milvus answers them.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

from pymilvus import MilvusClient
from pymilvus.grpc_gen import feder_pb2, milvus_pb2

from tests.e2e.util import unique_name


def _stub(milvus: MilvusClient):  # type: ignore[no-untyped-def]
    return milvus._get_connection()._stub


def test_batch_describe_collection_answers_each_as_describe_collection(milvus: MilvusClient) -> None:
    names = [unique_name("bd"), unique_name("bd")]
    for n in names:
        milvus.create_collection(n, dimension=4)
    stub = _stub(milvus)
    single = [
        stub.DescribeCollection(milvus_pb2.DescribeCollectionRequest(collection_name=n), timeout=10) for n in names
    ]
    ids = [d.collectionID for d in single]
    batch = stub.BatchDescribeCollection(
        milvus_pb2.BatchDescribeCollectionRequest(
            collection_name=[names[1], "no_such_collection", names[0]], collectionID=[ids[0], 987654321]
        ),
        timeout=10,
    )
    assert batch.status.code == 0
    by_name, missing, first, by_id, missing_id = batch.responses
    assert by_name == single[1] and first == single[0] and by_id == single[0]
    assert (missing.status.code, missing.status.reason) == (
        100, "can't find collection[database=default][collection=no_such_collection]"
    )
    assert (missing_id.status.code, missing_id.status.reason) == (
        100, "collection not found[database=default][collection=987654321]"
    )


def test_get_metrics_system_info_describes_this_proxy(milvus: MilvusClient) -> None:
    stub = _stub(milvus)
    before = datetime.now(UTC)
    resp = stub.GetMetrics(milvus_pb2.GetMetricsRequest(request=json.dumps({"metric_type": "system_info"})))
    assert resp.status.code == 0
    [node] = [n for n in json.loads(resp.response)["nodes_info"] if n["infos"]["type"] == "proxy"]
    infos = node["infos"]
    assert resp.component_name == infos["name"] == f"proxy{infos['id']}" and node["identifier"] == infos["id"] > 0
    assert infos["type"] == "proxy" and infos["has_error"] is False
    assert infos["system_info"]["deploy_mode"] == "STANDALONE"
    assert infos["system_info"]["build_version"] == milvus.get_server_version()
    hardware = infos["hardware_infos"]
    assert hardware["cpu_core_count"] == os.cpu_count()
    assert 0 <= hardware["cpu_core_usage"] <= 100
    with open("/proc/meminfo") as f:
        total = int(f.readline().split()[1]) * 1024
    assert hardware["memory"] == total and 0 < hardware["memory_usage"] < total
    assert hardware["ip"] == milvus._get_connection().server_address
    created = datetime.strptime(infos["created_time"], "%Y-%m-%d %H:%M:%S.%f +0000 UTC").replace(tzinfo=UTC)
    updated = datetime.strptime(infos["updated_time"], "%Y-%m-%d %H:%M:%S.%f +0000 UTC").replace(tzinfo=UTC)
    assert created < before <= updated
    by_req_type = stub.GetMetrics(milvus_pb2.GetMetricsRequest(request=json.dumps({"req_type": "system_info"})))
    assert by_req_type.status.code == 0 and json.loads(by_req_type.response)["nodes_info"][-1]["infos"]["id"] == infos["id"]

    for request, code, reason in (
        ("{}", 65535, "metric_type or req_type not found in request"),
        ("not json", 65535, "metric_type or req_type not found in request"),
        (json.dumps({"metric_type": "qc_tasks_all"}), 1200, "metric not found[metric=qc_tasks_all]"),
    ):
        status = stub.GetMetrics(milvus_pb2.GetMetricsRequest(request=request)).status
        assert (status.code, status.reason) == (code, reason)


def test_get_metrics_system_info_lists_every_role_of_the_cluster(milvus: MilvusClient) -> None:
    resp = _stub(milvus).GetMetrics(milvus_pb2.GetMetricsRequest(request=json.dumps({"metric_type": "system_info"})))
    assert resp.status.code == 0
    nodes = json.loads(resp.response)["nodes_info"]
    by_type: dict[str, list[dict]] = {}
    for n in nodes:
        assert n["identifier"] == n["infos"]["id"] and n["infos"]["name"] == f"{n['infos']['type']}{n['identifier']}"
        assert n["infos"]["system_info"]["deploy_mode"] == "STANDALONE"
        by_type.setdefault(n["infos"]["type"], []).append(n)
    # strata standalone runs a coordinator, a streaming node, a query node and a proxy.
    assert sorted(by_type) == ["datacoord", "proxy", "querycoord", "querynode", "rootcoord", "streamingnode"]
    assert all(len(ns) == 1 for ns in by_type.values()), by_type
    [proxy], [qc], [dc], [rc] = by_type["proxy"], by_type["querycoord"], by_type["datacoord"], by_type["rootcoord"]
    [qn], [sn] = by_type["querynode"], by_type["streamingnode"]
    assert nodes[-1] is proxy  # Milvus lists the proxy last
    coord = qc["identifier"]
    assert dc["identifier"] == rc["identifier"] == coord != proxy["identifier"]
    assert len({coord, qn["identifier"], sn["identifier"], proxy["identifier"]}) == 4
    edges = {(e["connected_identifier"], e["type"], e["target_type"]) for e in proxy["connected"]}
    assert edges == {(coord, "forward", "querycoord"), (coord, "forward", "datacoord"), (coord, "forward", "rootcoord")}
    assert (qn["identifier"], "manage", "querynode") in {tuple(e.values()) for e in qc["connected"]}
    assert (sn["identifier"], "manage", "streamingnode") in {tuple(e.values()) for e in dc["connected"]}
    # Every node of the standalone runs on this host: its address and this host's figures.
    for n in (qc, qn, sn):
        hw = n["infos"]["hardware_infos"]
        assert hw["ip"].startswith("127.0.0.1:") and hw["ip"] != proxy["infos"]["hardware_infos"]["ip"]
        assert hw["cpu_core_count"] == os.cpu_count() and hw["memory"] == proxy["infos"]["hardware_infos"]["memory"]


def test_register_link_and_dummy(milvus: MilvusClient) -> None:
    stub = _stub(milvus)
    link = stub.RegisterLink(milvus_pb2.RegisterLinkRequest(), timeout=10)
    assert (link.status.code, link.status.reason) == (0, "STANDALONE")
    name = unique_name("dm")
    milvus.create_collection(name, dimension=4)
    query = {"request_type": "query", "collection_name": name, "expr": "id >= 0", "output_fields": ["id"]}
    for request, answer in (
        (json.dumps(query), '{"status": "success"}'),
        (json.dumps({"request_type": "query", "collection_name": "no_such_collection"}), '{"status": "success"}'),
        (json.dumps({"request_type": "search"}), '{"status": "fail"}'),
        ("not json", '{"status": "fail"}'),
    ):
        assert stub.Dummy(milvus_pb2.DummyRequest(request_type=request), timeout=10).response == answer


def test_deprecated_calls_are_unavailable_as_in_milvus(milvus: MilvusClient) -> None:
    stub = _stub(milvus)
    for call, request, reason in (
        (stub.CalcDistance, milvus_pb2.CalcDistanceRequest(), "CalcDistance deprecated"),
        (stub.ListIndexedSegment, feder_pb2.ListIndexedSegmentRequest(), "ListIndexedSegment unimplemented"),
        (stub.DescribeSegmentIndexData, feder_pb2.DescribeSegmentIndexDataRequest(),
         "DescribeSegmentIndexData unimplemented"),
    ):
        status = call(request, timeout=10).status
        assert (status.code, status.reason, status.retriable) == (2, f"service unavailable: {reason}", True)
