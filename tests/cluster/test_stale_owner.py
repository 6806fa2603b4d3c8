"""A frozen streaming node loses its pchannels and cannot hurt anyone when it wakes up.

Real processes: etcd, a coordinator, two streaming nodes sharing one
``--wal-dir`` (or one NATS JetStream server, no WAL directory: ``wal_backend``),
a query node and a proxy, every session with a 5 s TTL; the pchannels are
spread 2 + 2 before anything is frozen.
Clients insert without pause; one streaming node is frozen with SIGSTOP until
the coordinator has moved its pchannels (term + 1) to the other node; the
clients recover by retrying; then SIGCONT. The woken node finds its session
lost and releases its channels; its late appends are fenced by the WAL
(``streamingnode/walimpls/README.md``). Every acknowledged row is there
exactly once.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from common.etcd.process import EtcdProcess
from tests.cluster.harness import Role, WALBackend, quiet_pymilvus, read_prefix, retry
from tests.harness import free_port

TTL = 5
DIM = 4
ROOT = "stale"


def _pchannels(endpoint: str) -> dict[str, dict[str, object]]:
    raw = read_prefix(endpoint, ROOT, "streamingcoord/pchannel/")
    return {k.rsplit("/", 1)[1]: json.loads(v) for k, v in raw.items()}


def _streaming_nodes(endpoint: str) -> dict[str, int]:
    """address -> server id of the live streaming-node sessions."""
    raw = read_prefix(endpoint, ROOT, "session/streamingnode-")
    return {json.loads(v)["address"]: int(json.loads(v)["server_id"]) for v in raw.values()}


class Inserter(threading.Thread):
    """Inserts batches of new ids without pause; a batch counts once insert() returned OK."""

    def __init__(self, port: int, first_id: int) -> None:
        super().__init__(daemon=True)
        self.client = MilvusClient(f"http://127.0.0.1:{port}", timeout=30)
        self.next_id = first_id
        self.acked: list[int] = []
        self.ack_times: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        rng = np.random.default_rng(self.next_id)
        while not self.stop.is_set():
            ids = list(range(self.next_id, self.next_id + 20))
            rows = [{"id": i, "v": rng.standard_normal(DIM).astype(np.float32).tolist()} for i in ids]
            while not self.stop.is_set():
                try:
                    self.client.insert("c", rows, timeout=5)
                except Exception:
                    time.sleep(0.2)  # the same rows again: an ambiguous failure may have landed
                    continue
                self.acked.extend(ids)
                self.ack_times.append(time.monotonic())
                break
            self.next_id += 20


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_frozen_streaming_node_is_replaced_and_fenced(tmp_path: Path, wal_backend: WALBackend) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    etcd = EtcdProcess(tmp_path / "etcd")
    roles: list[Role] = []
    inserters: list[Inserter] = []
    # A short rebalance cooldown: the second node gets its share of pchannels quickly.
    env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(TTL), "STRATA_COORDINATOR_REBALANCE_COOLDOWN_SECONDS": "1"}
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (tmp_path / "storage").as_uri()]  # shared object storage
        roles.append(Role("coordinator", ["coordinator", *common, *storage, "--port", "0"], logs, env))
        ports = {"sn-a": free_port(), "sn-b": free_port()}
        nodes: dict[str, Role] = {}
        for name, port in ports.items():  # one after the other: the second gets its share by rebalancing
            args = ["streamingnode", *common, *storage, *wal_backend.node_args(), "--port", str(port)]
            nodes[name] = Role(name, args, logs, {**env, **wal_backend.node_env()})
            roles.append(nodes[name])
            nodes[name].wait_for_log("role ready", 60)

        def balanced() -> bool:
            ps = _pchannels(etcd.endpoint).values()
            owners = [m["node_id"] for m in ps]
            return all(m["state"] == "ASSIGNED" for m in ps) and sorted(owners.count(o) for o in set(owners)) == [2, 2]

        deadline = time.monotonic() + 30
        while not balanced():  # 2 + 2, after which no rebalance moves anything until a node changes
            assert time.monotonic() < deadline, _pchannels(etcd.endpoint)
            time.sleep(0.2)
        roles.append(Role("querynode", ["querynode", *common, *storage], logs, env))
        proxy_port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(proxy_port)], logs, env))
        for role in roles[1:]:
            role.wait_for_log("role ready", 60)

        client = MilvusClient(f"http://127.0.0.1:{proxy_port}", timeout=30)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
        index = client.prepare_index_params()
        index.add_index("v", metric_type="L2")
        with quiet_pymilvus():
            retry("create", lambda: client.create_collection("c", schema=schema, index_params=index, num_shards=4), timeout=60)
        for node in nodes.values():
            wal_backend.check_used(node)

        # The node that owns pchannels is frozen; the other one takes them.
        ids_by_address = _streaming_nodes(etcd.endpoint)
        before = _pchannels(etcd.endpoint)
        frozen_id = int(before[sorted(before)[0]]["node_id"])
        frozen_name = next(n for n, p in ports.items() if ids_by_address[f"127.0.0.1:{p}"] == frozen_id)
        survivor_id = next(i for i in ids_by_address.values() if i != frozen_id)
        moved = {name: int(m["term"]) for name, m in before.items() if m["node_id"] == frozen_id}

        inserters = [Inserter(proxy_port, first_id=k * 1_000_000) for k in range(3)]
        with quiet_pymilvus():
            for t in inserters:
                t.start()
            while min(len(t.acked) for t in inserters) < 100:
                time.sleep(0.05)

            nodes[frozen_name].send_signal(signal.SIGSTOP)
            frozen_at = time.monotonic()
            deadline = frozen_at + TTL + 10
            while True:
                after = _pchannels(etcd.endpoint)
                if all(after[n]["node_id"] == survivor_id and after[n]["state"] == "ASSIGNED" for n in moved):
                    break
                assert time.monotonic() < deadline, after
                time.sleep(0.1)
            reassigned = time.monotonic() - frozen_at
            assert {n: int(after[n]["term"]) for n in moved} == {n: t + 1 for n, t in moved.items()}
            # The clients go on through the survivor while the frozen node still holds its files.
            acked_then = [len(t.acked) for t in inserters]
            deadline = time.monotonic() + 30
            while any(len(t.acked) <= n for t, n in zip(inserters, acked_then, strict=True)):
                assert time.monotonic() < deadline, "inserts did not resume"
                time.sleep(0.05)
            resumed = max(t.ack_times[-1] for t in inserters) - frozen_at
            # Reads follow the move too: the query node's consumers leave the silent owner,
            # so a Strong read succeeds while it is still frozen and sees every acked row.
            acked_so_far = {i for t in inserters for i in list(t.acked)}
            rows = retry(
                "query while frozen",
                lambda: client.query(
                    "c", filter="id >= 0", output_fields=["id"], limit=16384, consistency_level="Strong", timeout=10
                ),
                timeout=30,
            )
            read_ok = time.monotonic() - frozen_at
            missing = acked_so_far - {int(r["id"]) for r in rows}
            assert not missing, f"{len(missing)} acknowledged rows missing from a read while the old owner is frozen"

            nodes[frozen_name].send_signal(signal.SIGCONT)
            nodes[frozen_name].wait_for_log("session lost", 30)
            nodes[frozen_name].wait_for_log("every pchannel released", 30)
            time.sleep(2)  # inserts go on while the woken node settles
            for t in inserters:
                t.stop.set()
            for t in inserters:
                t.join(30)
        print(
            f"frozen streaming node: pchannels reassigned after {reassigned:.2f}s, inserts resumed by {resumed:.2f}s, "
            f"Strong read served by {read_ok:.2f}s"
        )

        acked = [i for t in inserters for i in t.acked]
        rows = retry(
            "query",
            lambda: client.query("c", filter="id >= 0", output_fields=["id"], limit=16384, consistency_level="Strong"),
            timeout=30,
        )
        got = [int(r["id"]) for r in rows]
        assert len(got) == len(set(got)), "a row is there twice"
        assert set(acked) <= set(got), f"{len(set(acked) - set(got))} acknowledged rows are missing"
        assert nodes[frozen_name].proc.poll() is None  # it lives on, as a new node
        client.close()
    except BaseException:
        for role in roles:
            print(f"==== {role.name} ====\n{role.log()[-4000:]}")
        raise
    finally:
        for t in inserters:
            t.stop.set()
        for role in reversed(roles):
            role.send_signal(signal.SIGCONT)
            role.kill()
        etcd.stop()
