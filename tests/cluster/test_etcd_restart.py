"""Restart etcd under a running cluster: every role carries on without a restart of its own.

Real processes (own process groups, 127.0.0.1 only): etcd, a coordinator, a
streaming node, a query node and a proxy, sessions with a 15 s TTL. After DDL,
inserts and a search work, etcd is stopped (SIGTERM), kept down for
``DOWN_SECONDS``, and started again on the same data dir and ports, well
within the TTL. Then, with the same role processes and the same proxy:

* DDL, inserts and a Strong search work again (time printed);
* every row inserted before the restart is still there;
* no role exited and none lost its session (the outage is shorter than
  what ``common.etcd.lease`` tolerates: TTL minus a margin).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from common.etcd.process import EtcdProcess
from tests.cluster.harness import Role, create_collection, query_ids, quiet_pymilvus, retry, search_finds, vectors
from tests.harness import free_port

TTL = 15
DOWN_SECONDS = 3  # etcd is away this long (plus its stop and start) before it comes back
DIM = 8
ROOT = "etcdrestart"


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_cluster_recovers_after_etcd_restarts(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    roles: list[Role] = []
    env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL)}
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (tmp_path / "storage").as_uri()]  # shared object storage
        roles.append(Role("coordinator", ["coordinator", *common, *storage, "--port", "0"], logs, env))
        roles.append(Role("streamingnode", ["streamingnode", *common, *storage, "--wal-dir", str(tmp_path / "wal")], logs, env))
        roles.append(Role("querynode", ["querynode", *common, *storage], logs, env))
        port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(port)], logs, env))
        for role in roles:
            role.wait_for_log("role ready", 60)

        client = MilvusClient(f"http://127.0.0.1:{port}", timeout=30)
        with quiet_pymilvus():  # the first DDL may wait for the streaming node's pchannels
            retry("create before", lambda: create_collection(client, "before", dim=DIM, num_shards=2), timeout=60)
        before = vectors(range(0, 100), DIM)
        client.insert("before", before, timeout=10)
        search_finds(client, "before", before[7])
        assert sorted(query_ids(client, "before")) == list(range(0, 100))

        stopped_at = time.monotonic()
        etcd.stop()
        time.sleep(DOWN_SECONDS)
        etcd.start()  # same object: same data dir, same client and peer ports
        restarted_at = time.monotonic()
        print(f"etcd down for {restarted_at - stopped_at:.2f}s (stop, {DOWN_SECONDS}s pause, start)")

        after = vectors(range(100, 200), DIM)
        with quiet_pymilvus():
            retry("create after", lambda: create_collection(client, "after", dim=DIM, num_shards=2), timeout=30)
            ddl_at = time.monotonic()
            retry("insert after", lambda: client.insert("before", after, timeout=5), timeout=30)
            insert_at = time.monotonic()
            retry("search after", lambda: search_finds(client, "before", after[3]), timeout=30)
            search_at = time.monotonic()
        print(
            "etcd restart: after etcd was back, "
            f"DDL worked after {ddl_at - restarted_at:.2f}s, insert after {insert_at - restarted_at:.2f}s, "
            f"Strong search after {search_at - restarted_at:.2f}s "
            f"({search_at - stopped_at:.2f}s after etcd was stopped)"
        )

        assert {"before", "after"} <= set(client.list_collections(timeout=10))
        got = query_ids(client, "before")
        assert sorted(got) == list(range(0, 200)), f"{len(got)} rows, {len(set(got))} distinct"
        search_finds(client, "before", before[42])
        extra = vectors(range(1000, 1010), DIM)
        client.insert("after", extra, timeout=10)
        assert sorted(query_ids(client, "after")) == list(range(1000, 1010))
        client.close()

        for role in roles:
            assert role.exited() is None, f"{role.name} exited with {role.exited()}"
            assert "session lost" not in role.log(), f"{role.name} lost its session"
    except BaseException:
        for role in roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")
        raise
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()
