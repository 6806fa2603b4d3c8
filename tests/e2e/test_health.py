"""GetComponentStates and CheckHealth as Milvus answers them, through pymilvus's stub, against the session's standalone.

pymilvus has no call for either (the Node.js SDK's ``checkHealth`` sends
``CheckHealth``), so the tests call pymilvus's own gRPC stub. A serving
standalone is healthy with no reasons and no quota states; the proxy reports
itself as role ``proxy``, Healthy, under its session's node id. An unhealthy
node is covered by ``tests/cluster/test_replicas_and_health.py``.
"""

from __future__ import annotations

from pymilvus import MilvusClient
from pymilvus.grpc_gen import common_pb2, milvus_pb2


def test_component_states_describe_this_proxy_as_healthy(milvus: MilvusClient) -> None:
    stub = milvus._get_connection()._stub
    resp = stub.GetComponentStates(milvus_pb2.GetComponentStatesRequest(), timeout=10)
    assert resp.status.error_code == common_pb2.Success, resp.status.reason
    assert resp.state.role == "proxy"
    assert resp.state.state_code == common_pb2.Healthy
    assert resp.state.nodeID > 0  # its session's server id, not Milvus's NotRegisteredID (-1)
    assert list(resp.subcomponent_states) == []


def test_check_health_of_a_serving_standalone_is_healthy_without_reasons(milvus: MilvusClient) -> None:
    stub = milvus._get_connection()._stub
    resp = stub.CheckHealth(milvus_pb2.CheckHealthRequest(), timeout=30)
    assert resp.status.error_code == common_pb2.Success, resp.status.reason
    assert resp.isHealthy, list(resp.reasons)
    assert list(resp.reasons) == []
    assert list(resp.quota_states) == []
