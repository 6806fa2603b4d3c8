"""Query nodes as real processes: replicas survive losing a node; a lost node's work moves.

etcd, a coordinator, a streaming node, query nodes and a proxy, each in its own
process group on 127.0.0.1, sessions with a 5 s TTL, shared object storage.
A collection with 2 shards holds flushed (sealed, on workers) and growing rows.

* ``replica_number=2`` on two query nodes: each replica gets its own node.
  Clients search and count without pause while one node is killed (SIGKILL):
  every read succeeds (the proxy moves to the other replica), the loading
  progress falls from 100% to 50% (one of two replicas), and once a new
  query node starts, it joins the emptied replica and the collection is fully
  loaded again.
* one replica on two query nodes: the delegators and sealed segments of a
  killed node are placed on the survivor; reads work again with every row,
  and rows deleted before the kill (sealed and growing) stay deleted.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from pymilvus import MilvusClient, connections, utility

from tests.cluster.harness import (
    Cluster,
    create_collection,
    query_ids,
    quiet_pymilvus,
    read_prefix,
    retry,
    vectors,
    wait_until,
)

TTL = 5
DIM = 8
ROOT = "replicas"
SEALED, GROWING = 1500, 300


class Reader(threading.Thread):
    """Searches and counts without pause; keeps every failure."""

    def __init__(self, uri: str, probe: list[float]) -> None:
        super().__init__(daemon=True)
        self.client = MilvusClient(uri, timeout=30)
        self.probe = probe
        self.ok = 0
        self.failures: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    hits = self.client.search("c", data=[self.probe], limit=5, consistency_level="Bounded", timeout=20)
                    count = self.client.query(
                        "c", filter="", output_fields=["count(*)"], consistency_level="Bounded", timeout=20
                    )[0]["count(*)"]
                    if len(hits[0]) != 5 or count != SEALED + GROWING:
                        self.failures.append(f"wrong answer: {len(hits[0])} hits, count {count}")
                    self.ok += 1
                except Exception as err:  # reported by the test
                    self.failures.append(str(err))
        finally:
            self.client.close()


def _replicas(endpoint: str) -> dict[str, list[int]]:
    [raw] = read_prefix(endpoint, ROOT, "querycoord/replica/").values() or [b'{"replicas": {}}']
    return json.loads(raw)["replicas"]


def _fill(client: MilvusClient) -> None:
    with quiet_pymilvus():
        retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=2), timeout=60)
    for first in range(0, SEALED, 500):
        client.insert("c", vectors(range(first, first + 500), DIM), timeout=30)
    client.flush("c", timeout=60)
    client.insert("c", vectors(range(SEALED, SEALED + GROWING), DIM), timeout=30)


def _progress(uri: str) -> int:
    """``utility.loading_progress`` of the collection, in percent."""
    alias = f"progress-{uri}"
    connections.connect(alias, uri=uri)
    try:
        shown = utility.loading_progress("c", using=alias)["loading_progress"]
    finally:
        connections.disconnect(alias)
    return int(str(shown).rstrip("%"))


def _loaded(client: MilvusClient) -> bool:
    return str(client.get_load_state("c")["state"]) == "Loaded"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_searches_survive_losing_a_replicas_node_and_the_replica_is_rebuilt(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ROOT, {"STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL)})
    readers: list[Reader] = []
    try:
        client = cluster.start(query_nodes=2)
        _fill(client)
        client.release_collection("c")
        client.load_collection("c", replica_number=2)
        wait_until("two replicas loaded", lambda: _loaded(client), 60)
        replicas = _replicas(cluster.etcd.endpoint)
        assert sorted(len(ns) for ns in replicas.values()) == [1, 1]
        assert set(replicas["1"]) != set(replicas["2"])

        readers = [Reader(cluster.uri, vectors(range(7, 8), DIM)[0]["v"]) for _ in range(2)]  # type: ignore[misc]
        for r in readers:
            r.start()
        wait_until("reads before the kill", lambda: all(r.ok >= 5 for r in readers), 60)
        assert _progress(cluster.uri) == 100
        cluster.role("qn-1").kill()
        killed_at = time.monotonic()
        # One replica of two is gone: the collection is loading again, half of its delegators ready.
        wait_until("progress falls to 50%", lambda: _progress(cluster.uri) == 50, 30)
        assert str(client.get_load_state("c")["state"]) == "Loading"
        marks = [r.ok for r in readers]
        wait_until("reads after the kill", lambda: all(r.ok >= m + 20 for r, m in zip(readers, marks, strict=True)), 60)
        assert time.monotonic() - killed_at < 60

        cluster.query_node("qn-2").wait_for_log("role ready", 60)
        wait_until("both replicas loaded again", lambda: _loaded(client), TTL + 60)
        restored_after = time.monotonic() - killed_at
        assert _progress(cluster.uri) == 100
        restored = _replicas(cluster.etcd.endpoint)
        assert sorted(len(ns) for ns in restored.values()) == [1, 1]
        print(f"replicas: both loaded again {restored_after:.2f}s after the kill (new node started at once)")
        for r in readers:
            r.stop.set()
        for r in readers:
            r.join(30)
        failures = [f for r in readers for f in r.failures]
        print(f"replicas: {sum(r.ok for r in readers)} reads, {len(failures)} failed, across a query node kill")
        assert not failures, failures[:5]
        assert sorted(query_ids(client, "c")) == list(range(SEALED + GROWING))
        client.close()
    except BaseException:
        cluster.dump()
        raise
    finally:
        for r in readers:
            r.stop.set()
        cluster.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_lost_query_nodes_delegators_and_segments_move_to_the_survivor(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path, ROOT, {"STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL)})
    try:
        client = cluster.start(query_nodes=2)
        _fill(client)
        wait_until("loaded", lambda: _loaded(client), 60)
        deleted = set(range(0, SEALED + GROWING, 10))  # sealed and growing rows
        client.delete("c", ids=sorted(deleted), timeout=30)
        alive = sorted(set(range(SEALED + GROWING)) - deleted)
        assert sorted(query_ids(client, "c")) == alive
        replicas = _replicas(cluster.etcd.endpoint)
        assert [sorted(ns) for ns in replicas.values()] and len(next(iter(replicas.values()))) == 2

        cluster.role("qn-1").kill()
        killed_at = time.monotonic()
        with quiet_pymilvus():
            got = retry("reads on the survivor", lambda: query_ids(client, "c"), timeout=TTL + 60)
        recovered = time.monotonic() - killed_at
        assert sorted(got) == alive, "a deleted row came back, or a row is missing"
        inserted = [r for first in range(0, SEALED, 500) for r in vectors(range(first, first + 500), DIM)]
        inserted += vectors(range(SEALED, SEALED + GROWING), DIM)
        probes = [r["v"] for r in inserted if r["id"] in deleted][::8]
        hits = client.search("c", data=probes, limit=3, consistency_level="Strong")
        assert not {h["id"] for row in hits for h in row} & deleted
        print(f"query node lost: every row served by the survivor after {recovered:.2f}s")
        survivor_log = cluster.role("qn-0").log()
        assert "sealed segment loaded" in survivor_log
        client.close()
    except BaseException:
        cluster.dump()
        raise
    finally:
        cluster.stop()
