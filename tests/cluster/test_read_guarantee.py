"""A read that cannot reach its guarantee fails after a bounded wait with an error saying so.

Real processes (own process groups, 127.0.0.1 only): etcd, a coordinator, a
streaming node and a query node serving the proxy (``--proxy-port``, so its
inserts reach the streaming node through ``Produce``). The streaming node is
frozen with SIGSTOP, well within its session TTL: no TimeTick reaches the
delegators, so a Strong read's guarantee timestamp (fresh from the TSO) is
never reached. The read fails with the delegator's "not yet readable" error
rather than hanging until the client's deadline, and works again once the node
is continued. In standalone the streaming node shares the proxy's process
(``launch/standalone_node.py``), so this runs on separate roles.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from pymilvus import MilvusClient, MilvusException

from common.etcd.process import EtcdProcess
from tests.cluster.harness import Role, create_collection, query_ids, quiet_pymilvus, retry, vectors
from tests.harness import free_port

DIM = 4
ROOT = "guarantee"


@pytest.mark.timeout(180)
def test_a_strong_read_fails_clearly_while_the_streaming_node_is_frozen(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    roles: list[Role] = []
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (tmp_path / "storage").as_uri()]
        node = Role("streamingnode", ["streamingnode", *common, *storage, "--wal-dir", str(tmp_path / "wal")], logs)
        roles.append(node)
        roles.append(Role("coordinator", ["coordinator", *common, *storage, "--pchannels", "2"], logs))
        proxy_port = free_port()
        roles.append(Role("querynode", ["querynode", *common, *storage, "--proxy-port", str(proxy_port)], logs))
        for role in roles:
            role.wait_for_log("role ready", 60)

        client = MilvusClient(f"http://127.0.0.1:{proxy_port}", timeout=30)
        with quiet_pymilvus():
            retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=2), timeout=60)
        client.insert("c", vectors(range(10), DIM))
        assert sorted(query_ids(client, "c")) == list(range(10))

        node.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            with quiet_pymilvus(), pytest.raises(MilvusException, match="not yet readable at the requested consistency"):
                client.query("c", filter="id >= 0", output_fields=["id"], consistency_level="Strong", timeout=30)
            waited = time.monotonic() - started
        finally:
            node.send_signal(signal.SIGCONT)
        print(f"failed after {waited:.1f} s (the client's deadline was 30 s)")
        assert sorted(query_ids(client, "c")) == list(range(10))
        client.close()
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()
