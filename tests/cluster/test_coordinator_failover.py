"""Active/standby coordinators as real processes: SIGKILL the active one, the cluster carries on.

etcd, two coordinators, a streaming node, a query node and a proxy each run as
their own process (own process group, 127.0.0.1 only). The coordinators use a
5 s election lease (``STRATA_COMMON_SESSION_TTL_SECONDS``), so the standby
takes over at most 5 s after the kill; the test measures how long DDL, inserts
and a Strong search take to work again through the same proxy, and checks
that no collection, segment or checkpoint is lost: the FLUSHED segments and
vchannel checkpoints in etcd before the kill are there after it, and the new
leader serves ``flush()`` from them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from common.etcd.process import EtcdProcess
from common.segment import SegmentMeta, SegmentState
from tests.cluster.harness import (
    Role,
    WALBackend,
    create_collection,
    query_ids,
    quiet_pymilvus,
    read_prefix,
    retry,
    search_finds,
    vectors,
)
from tests.harness import free_port

COORDINATOR_TTL_SECONDS = 5
DIM = 8
ROOT = "failover"


@pytest.fixture()
def cluster_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "logs").mkdir()
    yield tmp_path


def _vectors(ids: range) -> list[dict[str, object]]:
    return vectors(ids, DIM)


def _create(client: MilvusClient, name: str) -> None:
    create_collection(client, name, dim=DIM, num_shards=2)


def _ids(client: MilvusClient, name: str) -> set[int]:
    return set(query_ids(client, name))


def _flushed_segments(endpoint: str) -> dict[int, tuple[str, int]]:
    """segment id -> (manifest, rows) of every FLUSHED segment, as the coordinators stored it in etcd."""
    metas = [SegmentMeta.from_json(v) for v in read_prefix(endpoint, ROOT, "datacoord/segment/").values()]
    return {m.segment_id: (m.manifest, m.rows) for m in metas if m.state == SegmentState.FLUSHED}


def _checkpoints(endpoint: str) -> dict[str, int]:
    raw = read_prefix(endpoint, ROOT, "datacoord/channel-cp/")
    return {k: int(json.loads(v)["timetick"]) for k, v in raw.items()}


@pytest.mark.timeout(180)
def test_killing_the_active_coordinator_fails_over_to_the_standby(cluster_dir: Path, wal_backend: WALBackend) -> None:
    logs = cluster_dir / "logs"
    etcd = EtcdProcess(cluster_dir / "etcd")
    roles: list[Role] = []
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (cluster_dir / "storage").as_uri()]  # shared object storage
        coord_env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(COORDINATOR_TTL_SECONDS)}
        first = Role("coordinator-1", ["coordinator", *common, *storage, "--port", "0"], logs, coord_env)
        roles.append(first)
        first.wait_for_log("coordinator active", 30)
        second = Role("coordinator-2", ["coordinator", *common, *storage, "--port", "0"], logs, coord_env)
        roles.append(second)
        second.wait_for_log("coordinator standby", 30)
        node = ["streamingnode", *common, *storage, *wal_backend.node_args()]
        roles.append(Role("streamingnode", node, logs, wal_backend.node_env()))
        roles.append(Role("querynode", ["querynode", *common, *storage], logs))
        port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(port)], logs))
        for role in roles[2:]:
            role.wait_for_log("role ready", 60)

        client = MilvusClient(f"http://127.0.0.1:{port}", timeout=30)
        with quiet_pymilvus():  # the first DDL may wait for the streaming node's pchannels
            retry("create before failover", lambda: _create(client, "before"), timeout=60)
        wal_backend.check_used(roles[2])
        before = _vectors(range(0, 100))
        client.insert("before", before, timeout=10)
        search_finds(client, "before", before[7])
        assert _ids(client, "before") == set(range(0, 100))
        client.flush("before", timeout=60)  # segments FLUSHED, checkpoints moved: metadata to keep
        segments_before = _flushed_segments(etcd.endpoint)
        checkpoints_before = _checkpoints(etcd.endpoint)
        assert segments_before and len(checkpoints_before) == 2
        assert "coordinator active" not in second.log()

        first.kill()
        killed_at = time.monotonic()
        after = _vectors(range(100, 200))
        with quiet_pymilvus():
            retry("create after failover", lambda: _create(client, "after"), timeout=40)
            retry("insert after failover", lambda: client.insert("before", after, timeout=5), timeout=40)
            retry("search after failover", lambda: search_finds(client, "before", after[3]), timeout=40)
        recovery = time.monotonic() - killed_at
        print(f"coordinator failover: DDL, insert and Strong search work again after {recovery:.2f}s")
        assert "coordinator active" in second.log()
        assert recovery < 20, recovery

        # Nothing lost: both collections, every row from before and after the failover.
        assert {"before", "after"} <= set(client.list_collections(timeout=10))
        assert _ids(client, "before") == set(range(0, 200))
        search_finds(client, "before", before[42])
        extra = _vectors(range(1000, 1010))
        client.insert("after", extra, timeout=10)
        assert _ids(client, "after") == set(range(1000, 1010))
        # No segment or checkpoint lost: the new leader serves flush() from the same metadata.
        client.flush("before", timeout=60)
        segments_after = _flushed_segments(etcd.endpoint)
        assert {sid: segments_after.get(sid) for sid in segments_before} == segments_before
        checkpoints_after = _checkpoints(etcd.endpoint)
        assert all(checkpoints_after[v] >= cp for v, cp in checkpoints_before.items()), checkpoints_after
        assert _ids(client, "before") == set(range(0, 200))
        client.close()
    except BaseException:
        for role in roles:
            print(f"==== {role.name} ====\n{role.log()[-4000:]}")
        raise
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()
