"""A Strong read sees every insert acknowledged before it started, by whichever proxy, without a regular tick.

Real processes: etcd, a coordinator, a streaming node whose idle TimeTick comes
only every 5 s (longer than the delegator's 3 s stall bound), a query node and
two proxies. A Strong read's guarantee timestamp is fresh from the TSO, so its
delegator has to ask the streaming node for a TimeTick above it
(``RequestTimeTick``) rather than wait for one: without that the reads below
fail with "not yet readable".

1. Insert a batch through one proxy, then a Strong query and a Strong search
   through the other must find it; ten rounds, alternating the proxies.
2. A writer thread per proxy inserts batches nonstop while Strong reads
   alternate between the proxies: each finds the last two batches each writer
   had acknowledged before it was sent, and counts at least every row
   acknowledged by then.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from tests.cluster.harness import Cluster, Inserter, create_collection, quiet_pymilvus, retry, vectors
from tests.harness import free_port

DIM = 4
ROOT = "strongreads"
IDLE_TICK_SECONDS = "5"
RACE_SECONDS = 4.0


def _ids(client: MilvusClient, ids: range | list[int]) -> list[int]:
    rows = client.query("c", filter=f"id in {list(ids)}", output_fields=["id"], consistency_level="Strong", timeout=30)
    return sorted(int(r["id"]) for r in rows)


@pytest.mark.timeout(240)
def test_strong_reads_see_inserts_acknowledged_by_the_other_proxy(tmp_path: Path) -> None:
    c = Cluster(tmp_path, ROOT, env={"STRATA_STREAMINGNODE_TICK_INTERVAL_SECONDS": IDLE_TICK_SECONDS})
    clients: list[MilvusClient] = []
    try:
        clients.append(c.start(query_nodes=1))
        second = free_port()
        c.add("proxy-2", ["proxy", *c.common, "--port", str(second)]).wait_for_log("role ready", 60)
        clients.append(MilvusClient(f"http://127.0.0.1:{second}", timeout=30))
        uris = [c.uri, f"http://127.0.0.1:{second}"]
        started = time.monotonic()
        with quiet_pymilvus():
            retry("create", lambda: create_collection(clients[0], "c", dim=DIM, num_shards=2), timeout=120)

        print(f"created and loaded in {time.monotonic() - started:.1f} s")
        started = time.monotonic()
        # 1. Acknowledged on one proxy, then read on the other, nothing else written meanwhile.
        for n in range(10):
            writer, reader = clients[n % 2], clients[1 - n % 2]
            rows = vectors(range(n * 10, n * 10 + 10), DIM)
            writer.insert("c", rows)
            assert _ids(reader, range(n * 10, n * 10 + 10)) == list(range(n * 10, n * 10 + 10)), f"round {n}"
            hits = reader.search("c", data=[rows[3]["v"]], limit=1, consistency_level="Strong", timeout=30)
            assert hits[0][0]["id"] == rows[3]["id"], f"round {n}: {hits}"

        print(f"phase 1 in {time.monotonic() - started:.1f} s")
        # 2. Writers on both proxies, Strong reads alternating between them.
        writers = [Inserter(uri, "c", first_id=1_000_000 * (k + 1), dim=DIM, batch=10) for k, uri in enumerate(uris)]
        for w in writers:
            w.start()
        reads = 0
        try:
            deadline = time.monotonic() + RACE_SECONDS
            while time.monotonic() < deadline:
                acks = [list(w.acked) for w in writers]  # acknowledged before the read is sent
                latest = [i for a in acks for ack in a[-2:] for i in ack.ids]
                client = clients[reads % 2]
                assert _ids(client, latest) == sorted(latest), f"read {reads}"
                total = 100 + sum(len(ack.ids) for a in acks for ack in a)
                counted = client.query("c", output_fields=["count(*)"], consistency_level="Strong", timeout=30)
                assert counted[0]["count(*)"] >= total, f"read {reads}: {counted} < {total}"
                reads += 1
        finally:
            for w in writers:
                w.stop.set()
            for w in writers:
                w.join(30)
        print(f"{reads} reads beside {[len(w.acked) for w in writers]} acknowledged batches")
        assert reads >= 5 and all(w.acked for w in writers), (reads, [len(w.acked) for w in writers])
    except BaseException:
        c.dump()
        raise
    finally:
        for client in clients:
            client.close()
        c.stop()
