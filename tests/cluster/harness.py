"""Real processes for cluster tests: one role per process group, logs in files, retries."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np
from pymilvus import DataType, MilvusClient

from common.etcd.metastore import MetaStore
from common.etcd.process import EtcdProcess
from coordinator.streaming.pchannel import PChannelMeta
from streamingnode.walimpls.impls.nats.server import NatsServer
from tests.harness import REPO, free_port

T = TypeVar("T")


class Role:
    """One ``python -m launch.cli ROLE`` child in its own process group, logging to a file."""

    def __init__(self, name: str, args: list[str], logs: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log_path = logs / f"{name}.log"
        out = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "launch.cli", *args],
            cwd=REPO,
            stdout=out,
            stderr=out,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        out.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name} did not log {text!r} in {timeout}s:\n{self.log()[-3000:]}")
            time.sleep(0.05)

    def send_signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the role's whole process group."""
        with_suppressed_lookup(lambda: os.killpg(self.proc.pid, sig))

    @property
    def pid(self) -> int:
        """The child's pid, which is also its process group id."""
        return self.proc.pid

    def exited(self) -> int | None:
        """The exit status if the role's process has exited, else None."""
        return self.proc.poll()

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the child."""
        with_suppressed_lookup(lambda: os.killpg(self.proc.pid, signal.SIGKILL))
        self.proc.wait(10)


class WALBackend:
    """Where the streaming nodes of a cluster test keep their WAL.

    ``local``: one directory every node is given (``--wal-dir``), as on a shared
    disk. ``nats``: a ``nats-server -js`` on 127.0.0.1 that this object starts
    and stops; the nodes get no WAL directory at all.
    """

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.root = root
        self.nats: NatsServer | None = NatsServer(root / "nats") if name == "nats" else None

    def start(self) -> None:
        if self.nats is not None:
            self.nats.start()

    def stop(self) -> None:
        if self.nats is not None:
            self.nats.stop()

    def node_args(self) -> list[str]:
        """Flags of a streaming node."""
        return ["--wal-dir", str(self.root / "wal")] if self.nats is None else []

    def node_env(self) -> dict[str, str]:
        """Environment of a streaming node."""
        if self.nats is None:
            return {}
        return {"STRATA_STREAMINGNODE_WAL_BACKEND": "nats", "STRATA_STREAMINGNODE_WAL_NATS_SERVERS": self.nats.url}

    def check_used(self, node: Role) -> None:
        """Fail unless ``node`` opened its pchannels on this backend (and the nats run made no WAL directory)."""
        want = "wal-local" if self.nats is None else "wal-nats"
        node.wait_for_log("wal opened", 30)
        backends = ("component='wal-local'", "component='wal-nats'")
        lines = node.log().splitlines()
        opened = [ln for ln in lines if "event='wal opened'" in ln and any(b in ln for b in backends)]
        assert opened and all(f"component='{want}'" in ln for ln in opened), opened[:3]
        if self.nats is not None:
            assert not (self.root / "wal").exists()


def with_suppressed_lookup(fn: Callable[[], None]) -> None:
    try:
        fn()
    except ProcessLookupError:
        pass


def wait_until(what: str, cond: Callable[[], object], timeout: float) -> float:
    """Poll ``cond()`` every 50 ms until truthy; returns when (monotonic). Fails after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(0.05)
    return time.monotonic()


def retry(what: str, fn: Callable[[], T], *, timeout: float) -> T:
    """Call ``fn`` until it returns (pymilvus raises while the cluster recovers), at most ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return fn()
        except Exception as err:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} still failing after {timeout}s") from err
            time.sleep(0.2)


@contextlib.contextmanager
def quiet_pymilvus() -> Iterator[None]:
    """pymilvus logs every failed call with a traceback; the expected ones during the gap are noise."""
    logger = logging.getLogger("pymilvus")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def read_prefix(endpoint: str, root: str, prefix: str) -> dict[str, bytes]:
    """Keys (relative to ``root``) and values under ``prefix``, read from etcd once."""

    async def scan() -> dict[str, bytes]:
        store = await MetaStore.connect(endpoint, root)
        try:
            return {kv.key: kv.value for kv in await store.scan(prefix)}
        finally:
            await store.close()

    return asyncio.run(scan())


def read_pchannels(endpoint: str, root: str) -> dict[str, PChannelMeta]:
    """pchannel name -> its assignment (owner, term, state) as the coordinator stored it in etcd."""
    prefix = "streamingcoord/pchannel/"
    return {k[len(prefix) :]: PChannelMeta.from_json(v) for k, v in read_prefix(endpoint, root, prefix).items()}


def read_sessions(endpoint: str, root: str, role: str) -> dict[int, str]:
    """server id -> address of the live sessions of ``role``."""
    raw = read_prefix(endpoint, root, f"session/{role}-")
    return {int(d["server_id"]): str(d["address"]) for d in (json.loads(v) for v in raw.values())}


# Collections of the cluster tests: an INT64 primary key "id" and a FLOAT_VECTOR "v", L2.


def vectors(ids: range, dim: int) -> list[dict[str, object]]:
    """Rows for ``ids``; the same ids always get the same vectors."""
    rng = np.random.default_rng(ids.start)
    vecs = rng.standard_normal((len(ids), dim)).astype(np.float32)
    return [{"id": i, "v": vecs[k].tolist()} for k, i in enumerate(ids)]


def create_collection(client: MilvusClient, name: str, *, dim: int, num_shards: int) -> None:
    """Create, index and load the collection; safe to retry after any failure.

    pymilvus creates, indexes and loads in three calls; an earlier attempt may have failed
    after any of them (or after the server did the work and the answer was lost), so an
    existing collection gets the same index (a no-op when it has it) and a load (idempotent).
    """
    index = client.prepare_index_params()
    index.add_index("v", metric_type="L2")
    if client.has_collection(name, timeout=5):
        client.create_index(name, index, timeout=10)
        client.load_collection(name, timeout=30)
        return
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=dim)
    client.create_collection(name, schema=schema, index_params=index, num_shards=num_shards, timeout=10)


def query_ids(client: MilvusClient, name: str) -> list[int]:
    """Every id of the collection (duplicates kept), read with Strong consistency."""
    rows = client.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong", timeout=30)
    return [int(r["id"]) for r in rows]


def search_finds(client: MilvusClient, name: str, row: dict[str, object]) -> None:
    """A Strong search for ``row``'s vector returns ``row`` first."""
    hits = client.search(name, data=[row["v"]], limit=1, consistency_level="Strong", timeout=10)
    assert hits[0][0]["id"] == row["id"], hits


@dataclass(frozen=True, slots=True)
class Ack:
    """One acknowledged batch: its ids, when the attempt that succeeded was sent, when it returned."""

    ids: range
    sent: float
    acked: float


class Inserter(threading.Thread):
    """Inserts batches of new ids into ``collection`` through its own client until ``stop`` is set.

    A batch counts as acknowledged only once ``insert()`` returned without error. After an
    error the same batch (same ids, same vectors) is sent again until it succeeds: a failed
    attempt may still have landed, so ids may be written more than once.
    """

    def __init__(self, uri: str, collection: str, *, first_id: int, dim: int, batch: int = 20) -> None:
        super().__init__(daemon=True, name=f"inserter-{first_id}")
        self.client = MilvusClient(uri, timeout=30)
        self.collection = collection
        self.dim = dim
        self.batch = batch
        self.next_id = first_id
        self.acked: list[Ack] = []
        self.attempted: list[range] = []
        self.failures = 0
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                ids = range(self.next_id, self.next_id + self.batch)
                rows = vectors(ids, self.dim)
                self.attempted.append(ids)
                while not self.stop.is_set():
                    sent = time.monotonic()
                    try:
                        self.client.insert(self.collection, rows, timeout=5)
                    except Exception:
                        self.failures += 1
                        time.sleep(0.1)
                        continue
                    self.acked.append(Ack(ids, sent, time.monotonic()))
                    break
                self.next_id += self.batch
        finally:
            self.client.close()

    def acked_ids(self) -> list[int]:
        return [i for a in list(self.acked) for i in a.ids]

    def attempted_ids(self) -> set[int]:
        return {i for r in list(self.attempted) for i in r}


class Cluster:
    """etcd, a coordinator, a streaming node, query nodes ``qn-0``... and a proxy, each its own process group.

    ``env`` reaches every role (e.g. a short session TTL). ``start`` returns a client of the proxy once every
    role has logged "role ready"; ``stop`` kills the roles (newest first) and etcd.
    """

    def __init__(self, tmp_path: Path, root: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        self.etcd = EtcdProcess(tmp_path / "etcd")
        self.roles: list[Role] = []
        self.env = env or {}
        self.storage = ["--storage", (tmp_path / "storage").as_uri()]
        self.wal = str(tmp_path / "wal")
        self.port = free_port()
        self.common: list[str] = []

    def start(self, query_nodes: int) -> MilvusClient:
        self.etcd.start()
        self.common = ["--etcd", self.etcd.endpoint, "--etcd-root", self.root]
        self.add("coordinator", ["coordinator", *self.common, *self.storage, "--port", "0"])
        self.add("streamingnode", ["streamingnode", *self.common, *self.storage, "--wal-dir", self.wal])
        for i in range(query_nodes):
            self.query_node(f"qn-{i}")
        self.add("proxy", ["proxy", *self.common, "--port", str(self.port)])
        for role in self.roles:
            role.wait_for_log("role ready", 60)
        return MilvusClient(self.uri, timeout=30)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, name: str, args: list[str]) -> Role:
        role = Role(name, args, self.logs, self.env)
        self.roles.append(role)
        return role

    def query_node(self, name: str) -> Role:
        return self.add(name, ["querynode", *self.common, *self.storage])

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)

    def dump(self) -> None:
        for role in self.roles:
            print(f"==== {role.name} (exit {role.exited()}) ====\n{role.log()[-4000:]}")

    def stop(self) -> None:
        for role in reversed(self.roles):
            role.kill()
        self.etcd.stop()


@contextlib.contextmanager
def cluster(tmp_path: Path, root: str, *, query_nodes: int = 1) -> Iterator[tuple[Cluster, MilvusClient]]:
    """A started ``Cluster`` and its client; every role's log tail printed if the body fails; all stopped."""
    c = Cluster(tmp_path, root)
    try:
        client = c.start(query_nodes)
        try:
            yield c, client
        finally:
            client.close()
    except BaseException:
        c.dump()
        raise
    finally:
        c.stop()
