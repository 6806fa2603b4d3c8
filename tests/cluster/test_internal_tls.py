"""A real cluster with mutual TLS between its roles (``common.security.internaltlsEnabled``).

etcd, a coordinator, a streaming node, a query node and a proxy, each its own process, all given
Milvus's internal TLS keys (plus Strata's ``internaltls.mutual``) as ``STRATA_`` variables, with
certificates made at test time. pymilvus talks plaintext to the proxy (its client port follows
``tlsMode``, 0 here) and inserts, queries and searches: every hop behind it (proxy to streaming
node and query node, query node to streaming node, coordinator to both) is TLS. Each internal port
found in etcd refuses a plaintext client and a TLS client without a certificate of the cluster's CA,
and answers one that has it; ``strata health --pid`` checks a role with the role's own TLS.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.cluster.harness import Cluster, create_collection, query_ids, read_sessions, search_finds, vectors
from tests.e2e.tlscerts import make_ca, make_leaf
from tests.harness import REPO, free_port

ROOT = "internaltls"
DIM = 8


def _check(channel: grpc.Channel) -> int:
    with channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    return int(answer.status)


@pytest.mark.timeout(240)
def test_cluster_serves_with_mutual_internal_tls_and_its_ports_refuse_strangers(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    certs.mkdir()
    ca = make_ca(certs, "ca")
    role = make_leaf(certs, "role", ca, server=True, client=True)
    env = {"STRATA_COMMON_SECURITY_INTERNALTLSENABLED": "true", "STRATA_INTERNALTLS_SERVERPEMPATH": str(role.cert),
           "STRATA_INTERNALTLS_SERVERKEYPATH": str(role.key), "STRATA_INTERNALTLS_CAPEMPATH": str(ca[0].cert),
           "STRATA_INTERNALTLS_MUTUAL": "true",
           # A fixed port, so that strata health --pid can find the streaming node from its environment.
           "STRATA_STREAMINGNODE_PORT": str(free_port())}
    c = Cluster(tmp_path, ROOT, env=env)
    try:
        client = c.start(query_nodes=1)
        try:
            create_collection(client, "tls", dim=DIM, num_shards=2)
            rows = vectors(range(200), DIM)
            client.insert("tls", rows, timeout=30)
            assert sorted(query_ids(client, "tls")) == list(range(200))
            search_finds(client, "tls", rows[17])
        finally:
            client.close()

        internal = [address for name in ("coordinator", "streamingnode", "querynode")
                    for address in read_sessions(c.etcd.endpoint, ROOT, name).values()]
        assert len(internal) == 3, internal
        options = [("grpc.ssl_target_name_override", "localhost")]
        trusted = ca[0].cert.read_bytes()
        for address in internal:
            with pytest.raises(grpc.RpcError) as plain:
                _check(grpc.insecure_channel(address))
            assert plain.value.code() == grpc.StatusCode.UNAVAILABLE, address
            with pytest.raises(grpc.RpcError) as no_cert:
                _check(grpc.secure_channel(address, grpc.ssl_channel_credentials(trusted), options))
            assert no_cert.value.code() == grpc.StatusCode.UNAVAILABLE, address
            member = grpc.ssl_channel_credentials(trusted, role.key.read_bytes(), role.cert.read_bytes())
            assert _check(grpc.secure_channel(address, member, options)) == health_pb2.HealthCheckResponse.SERVING
        # A container's HEALTHCHECK (strata health --pid) speaks the role's internal TLS.
        probe = subprocess.run([sys.executable, "-m", "launch.cli", "health", "--timeout", "5", "--pid",
                                str(c.role("streamingnode").pid)], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert probe.returncode == 0, probe
    except BaseException:
        c.dump()
        raise
    finally:
        c.stop()
