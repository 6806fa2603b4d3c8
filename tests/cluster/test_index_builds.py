"""Index builds across processes: a flushed segment waits for a query node, then one builds it, unloaded.

etcd, a coordinator, a streaming node and a proxy, each in its own process on
127.0.0.1, and no query node at first. A flushed segment of 1,500 rows gets an
IVF_FLAT index: it stays InProgress without error while no query node exists;
once one starts, the coordinator has it build the index (the collection is
never loaded for it) and ``describe_index`` says Finished. Loading then
restores the saved index on the node.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from common.etcd.process import EtcdProcess
from tests.cluster.harness import Role, vectors, wait_until
from tests.harness import free_port

ROOT, DIM, ROWS = "index-builds", 8, 1500


@pytest.mark.timeout(240)
def test_segments_wait_for_a_query_node_then_are_built_without_a_load(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    etcd.start()
    roles: list[Role] = []
    port = free_port()
    common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
    storage = ["--storage", (tmp_path / "storage").as_uri()]
    try:
        roles.append(Role("coordinator", ["coordinator", *common, *storage, "--port", "0"], logs))
        roles.append(Role("streamingnode", ["streamingnode", *common, *storage, "--wal-dir", str(tmp_path / "wal")],
                          logs))
        roles.append(Role("proxy", ["proxy", *common, "--port", str(port)], logs))
        for role in roles:
            role.wait_for_log("role ready", 60)
        uri = f"http://127.0.0.1:{port}"
        client = MilvusClient(uri, timeout=30)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
        client.create_collection("c", schema=schema, num_shards=1)
        rows = vectors(range(ROWS), DIM)
        client.insert("c", rows)
        client.flush("c", timeout=60)
        index = client.prepare_index_params()
        index.add_index("v", index_type="IVF_FLAT", metric_type="L2", params={"nlist": 16})
        # The index is created, but pymilvus' wait for Finished times out: there is no query node yet.
        with pytest.raises(MilvusException, match="timeout"):
            client.create_index("c", index, timeout=5)
        desc = client.describe_index("c", "v")
        assert desc["state"] == "InProgress" and desc["pending_index_rows"] == ROWS, desc
        assert "index build round failed" not in roles[0].log()

        node = Role("qn-0", ["querynode", *common, *storage], logs)
        roles.append(node)
        wait_until("the index is built", lambda: client.describe_index("c", "v")["state"] == "Finished", 90)
        assert client.describe_index("c", "v")["indexed_rows"] == ROWS
        assert "segment index built unloaded" in node.log()
        client.load_collection("c", timeout=60)
        hits = client.search("c", data=[rows[11]["v"]], limit=1, search_params={"nprobe": 16},
                             consistency_level="Strong")
        assert hits[0][0]["id"] == 11
        assert node.log().count("event='index built'") == 1  # the load restored it
        client.close()
    except BaseException:
        for role in roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")
        raise
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()
