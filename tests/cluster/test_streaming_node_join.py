"""A streaming node that joins a running cluster gets its share of pchannels, under write load.

Real processes (own process groups, 127.0.0.1 only): etcd, a coordinator
(rebalance cooldown 2 s), one streaming node, a query node and a proxy; 4
pchannels, a collection with 4 shards. Three clients insert without pause,
then a second streaming node starts on the same ``--wal-dir``. Checked:

* the pchannels end up spread 2 + 2, and stay so;
* every pchannel that moved has a term exactly one higher per move, the others
  keep theirs (no flapping);
* clients keep getting inserts acknowledged; a Strong query returns every
  acknowledged id, none twice.
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
    create_collection,
    query_ids,
    quiet_pymilvus,
    read_pchannels,
    read_sessions,
    retry,
    wait_until,
)
from tests.harness import free_port

TTL = 5
DIM = 8
ROOT = "snjoin"
PCHANNELS = 4




@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_joining_streaming_node_takes_half_the_pchannels_without_losing_writes(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    roles: list[Role] = []
    inserters: list[Inserter] = []
    env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL), "STRATA_COORDINATOR_REBALANCE_COOLDOWN_SECONDS": "2"}
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (tmp_path / "storage").as_uri()]  # shared object storage
        wal = str(tmp_path / "wal")
        roles.append(Role("sn-a", ["streamingnode", *common, *storage, "--wal-dir", wal], logs, env))
        roles.append(
            Role("coordinator", ["coordinator", *common, *storage, "--port", "0", "--pchannels", str(PCHANNELS)], logs, env)
        )
        roles.append(Role("querynode", ["querynode", *common, *storage], logs, env))
        proxy_port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(proxy_port)], logs, env))
        for role in roles:
            role.wait_for_log("role ready", 60)
        uri = f"http://127.0.0.1:{proxy_port}"
        client = MilvusClient(uri, timeout=30)
        with quiet_pymilvus():
            retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=PCHANNELS), timeout=60)
        before = read_pchannels(etcd.endpoint, ROOT)
        assert len({m.node_id for m in before.values()}) == 1

        inserters = [Inserter(uri, "c", first_id=k * 1_000_000, dim=DIM) for k in range(3)]
        with quiet_pymilvus():
            for t in inserters:
                t.start()
            wait_until("inserts before the join", lambda: min(len(t.acked) for t in inserters) >= 5, 60)
            roles.append(Role("sn-b", ["streamingnode", *common, *storage, "--wal-dir", wal], logs, env))
            joined_at = time.monotonic()
            roles[-1].wait_for_log("role ready", 60)

            def spread() -> bool:
                ps = read_pchannels(etcd.endpoint, ROOT).values()
                owners = [m.node_id for m in ps]
                return all(m.state == PChannelState.ASSIGNED for m in ps) and sorted(
                    owners.count(o) for o in set(owners)
                ) == [2, 2]

            balanced_at = wait_until("pchannels spread over both nodes", spread, 60)
            settled = read_pchannels(etcd.endpoint, ROOT)
            marks = [len(t.acked) for t in inserters]
            wait_until(
                "inserts after the rebalance",
                lambda: all(len(t.acked) >= n + 5 for t, n in zip(inserters, marks, strict=True)),
                60,
            )
            time.sleep(3)  # longer than the cooldown: a balanced cluster must not move anything
            for t in inserters:
                t.stop.set()
            for t in inserters:
                t.join(30)

        after = read_pchannels(etcd.endpoint, ROOT)
        assert after == settled, "pchannels moved again after the spread was even"
        new_node = next(i for i in read_sessions(etcd.endpoint, ROOT, "streamingnode") if i not in
                        {m.node_id for m in before.values()})
        moved = {p for p, m in after.items() if m.node_id == new_node}
        assert len(moved) == 2
        assert {p: m.term for p, m in after.items()} == {
            p: m.term + (1 if p in moved else 0) for p, m in before.items()
        }, "each moved pchannel moves once (term + 1); the others keep their term"
        print(f"streaming node joined: pchannels spread 2 + 2 after {balanced_at - joined_at:.2f}s")

        acked = [i for t in inserters for i in t.acked_ids()]
        got = retry("query", lambda: query_ids(client, "c"), timeout=30)
        assert len(got) == len(set(got)), "a row is there twice"
        missing = set(acked) - set(got)
        assert not missing, f"{len(missing)} acknowledged ids are missing"
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
