"""SIGKILL a streaming node under write load: its pchannels move, the clients recover, nothing is lost.

Real processes (own process groups, 127.0.0.1 only): etcd, a coordinator, two
streaming nodes sharing one ``--wal-dir`` (or one NATS JetStream server:
``wal_backend``), a query node and a proxy, every
session with a 5 s TTL (``STRATA_COMMON_SESSION_TTL_SECONDS``). Both streaming
nodes register before the coordinator starts, so its first balance round
spreads the 4 pchannels over both. A collection with 4 shards puts one vchannel
on each pchannel, so every insert batch touches both nodes.

Three clients insert batches of new ids without pause, each through its own
``MilvusClient``; a batch is acknowledged once ``insert()`` returned, and a
failed batch is retried with the same ids. The streaming node that owns
``<cluster>-dml_0`` is killed (SIGKILL to its process group). Checked:

* its pchannels move to the survivor within TTL + 10 s, each term exactly one
  higher (read from etcd before and after); the survivor's own pchannels keep
  their terms;
* every client gets inserts acknowledged again (times printed);
* a Strong query returns every acknowledged id, no id twice, and only ids a
  client sent; a Strong search finds a row acknowledged after the kill.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from common.etcd.process import EtcdProcess
from coordinator.streaming.pchannel import PChannelState
from tests.cluster.harness import (
    Inserter,
    Role,
    WALBackend,
    create_collection,
    query_ids,
    quiet_pymilvus,
    read_pchannels,
    read_sessions,
    retry,
    search_finds,
    vectors,
    wait_until,
)
from tests.harness import free_port

TTL = 5
DIM = 8
ROOT = "snfailover"
COLLECTION = "c"
PCHANNELS = 4
CLIENTS = 3
BATCHES_AFTER_RECOVERY = 5  # per client, before the inserters stop




@pytest.mark.slow
@pytest.mark.timeout(300)
def test_killing_a_streaming_node_moves_its_pchannels_and_loses_no_acknowledged_insert(
    tmp_path: Path, wal_backend: WALBackend
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    roles: list[Role] = []
    inserters: list[Inserter] = []
    env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL)}
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (tmp_path / "storage").as_uri()]  # shared object storage
        nodes: dict[str, Role] = {}
        addresses: dict[str, str] = {}
        for name in ("sn-a", "sn-b"):
            port = free_port()
            addresses[name] = f"127.0.0.1:{port}"
            args = ["streamingnode", *common, *storage, *wal_backend.node_args(), "--port", str(port)]
            nodes[name] = Role(name, args, logs, {**env, **wal_backend.node_env()})
            roles.append(nodes[name])
        for node in nodes.values():
            node.wait_for_log("role ready", 60)
        # Both sessions exist before the coordinator's first balance round: it spreads the pchannels.
        roles.append(
            Role("coordinator", ["coordinator", *common, *storage, "--port", "0", "--pchannels", str(PCHANNELS)], logs, env)
        )
        roles.append(Role("querynode", ["querynode", *common, *storage], logs, env))
        proxy_port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(proxy_port)], logs, env))
        for role in roles[2:]:
            role.wait_for_log("role ready", 60)

        def all_assigned() -> bool:
            ps = read_pchannels(etcd.endpoint, ROOT)
            return len(ps) == PCHANNELS and all(m.state == PChannelState.ASSIGNED for m in ps.values())

        wait_until("every pchannel assigned", all_assigned, 30)
        sessions = read_sessions(etcd.endpoint, ROOT, "streamingnode")
        node_id = {name: next(i for i, a in sessions.items() if a == addresses[name]) for name in nodes}

        uri = f"http://127.0.0.1:{proxy_port}"
        client = MilvusClient(uri, timeout=30)
        with quiet_pymilvus():
            retry("create", lambda: create_collection(client, COLLECTION, dim=DIM, num_shards=PCHANNELS), timeout=60)
        for node in nodes.values():
            wal_backend.check_used(node)

        before = read_pchannels(etcd.endpoint, ROOT)
        owners = {m.node_id for m in before.values()}
        assert owners == set(node_id.values()), f"both streaming nodes should own pchannels: {before}"
        victim_id = before[sorted(before)[0]].node_id
        victim = next(n for n, i in node_id.items() if i == victim_id)
        survivor = next(n for n in nodes if n != victim)
        survivor_id = node_id[survivor]
        moved = {p: m.term for p, m in before.items() if m.node_id == victim_id}
        kept = {p: m.term for p, m in before.items() if m.node_id == survivor_id}

        inserters = [Inserter(uri, COLLECTION, first_id=k * 1_000_000, dim=DIM) for k in range(CLIENTS)]
        with quiet_pymilvus():  # failed inserts while the pchannels move are expected
            for t in inserters:
                t.start()
            wait_until("inserts before the kill", lambda: min(len(t.acked) for t in inserters) >= 5, 60)

            nodes[victim].kill()
            killed_at = time.monotonic()

            def reassigned() -> bool:
                now = read_pchannels(etcd.endpoint, ROOT)
                return all(now[p].node_id == survivor_id and now[p].state == PChannelState.ASSIGNED for p in moved)

            reassigned_at = wait_until("pchannels of the killed node reassigned", reassigned, TTL + 10)

            def recovered(t: Inserter) -> bool:
                return any(a.sent > killed_at for a in list(t.acked))

            all_recovered_at = wait_until("every client inserts again", lambda: all(map(recovered, inserters)), 60)
            marks = [len(t.acked) for t in inserters]
            wait_until(
                "more inserts after recovery",
                lambda: all(len(t.acked) >= n + BATCHES_AFTER_RECOVERY for t, n in zip(inserters, marks, strict=True)),
                60,
            )
            for t in inserters:
                t.stop.set()
            for t in inserters:
                t.join(30)
                assert not t.is_alive(), f"{t.name} did not stop"

        after = read_pchannels(etcd.endpoint, ROOT)
        assert {p: (after[p].node_id, after[p].term) for p in moved} == {
            p: (survivor_id, term + 1) for p, term in moved.items()
        }, after
        assert {p: (after[p].node_id, after[p].term) for p in kept} == {
            p: (survivor_id, term) for p, term in kept.items()
        }, after

        first_ack = min(a.acked for t in inserters for a in t.acked if a.sent > killed_at)
        failures = sum(t.failures for t in inserters)
        print(
            f"streaming node killed ({victim}, pchannels {sorted(moved)}): "
            f"reassigned (term+1) after {reassigned_at - killed_at:.2f}s, "
            f"first insert acknowledged after {first_ack - killed_at:.2f}s, "
            f"every client inserting again after {all_recovered_at - killed_at:.2f}s "
            f"({failures} failed attempts retried)"
        )

        acked = [i for t in inserters for i in t.acked_ids()]
        attempted = set().union(*(t.attempted_ids() for t in inserters))
        got = retry("query", lambda: query_ids(client, COLLECTION), timeout=30)
        assert len(got) == len(set(got)), f"{len(got) - len(set(got))} ids are returned twice"
        missing = set(acked) - set(got)
        assert not missing, f"{len(missing)} acknowledged ids are missing, e.g. {sorted(missing)[:10]}"
        assert set(got) <= attempted, f"ids nobody inserted: {sorted(set(got) - attempted)[:10]}"

        late = next(a for t in inserters for a in t.acked if a.sent > killed_at)
        search_finds(client, COLLECTION, vectors(late.ids, DIM)[len(late.ids) // 2])
        assert nodes[victim].exited() is not None
        for role in roles:
            if role is not nodes[victim]:
                assert role.exited() is None, f"{role.name} exited with {role.exited()}"
        print(f"{len(acked)} acknowledged rows, {len(got)} rows returned by a Strong query")
        client.close()
    except BaseException:
        for role in roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")
        raise
    finally:
        for t in inserters:
            t.stop.set()
        for role in reversed(roles):
            role.kill()
        etcd.stop()
