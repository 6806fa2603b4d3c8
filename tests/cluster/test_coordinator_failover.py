"""Active/standby coordinators as real processes: SIGKILL the active one, the cluster carries on.

etcd, two coordinators, a streaming node, a query node and a proxy each run as
their own process (own process group, 127.0.0.1 only). The coordinators use a
5 s election lease (``STRATA_COMMON_SESSION_TTL_SECONDS``), so the standby
takes over at most 5 s after the kill; the test measures how long DDL, inserts
and a Strong search take to work again through the same proxy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from services.etcd.process import EtcdProcess
from tests.harness import REPO, free_port

COORDINATOR_TTL_SECONDS = 5
DIM = 8
T = TypeVar("T")


class Role:
    """One ``python -m services.cli ROLE`` child in its own process group, logging to a file."""

    def __init__(self, name: str, args: list[str], logs: Path, env: dict[str, str] | None = None) -> None:
        self.name = name
        self.log_path = logs / f"{name}.log"
        out = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "services.cli", *args],
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

    def kill(self) -> None:
        """SIGKILL the whole process group and reap the child."""
        with_suppressed_lookup(lambda: os.killpg(self.proc.pid, signal.SIGKILL))
        self.proc.wait(10)


def with_suppressed_lookup(fn: Callable[[], None]) -> None:
    try:
        fn()
    except ProcessLookupError:
        pass


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


@pytest.fixture()
def cluster_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "logs").mkdir()
    yield tmp_path


def _vectors(ids: range) -> list[dict[str, object]]:
    rng = np.random.default_rng(ids.start)
    vecs = rng.standard_normal((len(ids), DIM)).astype(np.float32)
    return [{"id": i, "v": vecs[k].tolist()} for k, i in enumerate(ids)]


def _create(client: MilvusClient, name: str) -> None:
    if client.has_collection(name, timeout=5):
        return  # an earlier attempt got through before its answer was lost
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index("v", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=index, num_shards=2, timeout=10)


def _ids(client: MilvusClient, name: str) -> set[int]:
    rows = client.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong", timeout=10)
    return {int(r["id"]) for r in rows}


def _search_finds(client: MilvusClient, name: str, row: dict[str, object]) -> None:
    hits = client.search(name, data=[row["v"]], limit=1, consistency_level="Strong", timeout=10)
    assert hits[0][0]["id"] == row["id"], hits


@pytest.mark.timeout(180)
def test_killing_the_active_coordinator_fails_over_to_the_standby(cluster_dir: Path) -> None:
    logs = cluster_dir / "logs"
    etcd = EtcdProcess(cluster_dir / "etcd")
    roles: list[Role] = []
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", "failover"]
        coord_env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(COORDINATOR_TTL_SECONDS)}
        first = Role("coordinator-1", ["coordinator", *common, "--port", "0"], logs, coord_env)
        roles.append(first)
        first.wait_for_log("coordinator active", 30)
        second = Role("coordinator-2", ["coordinator", *common, "--port", "0"], logs, coord_env)
        roles.append(second)
        second.wait_for_log("coordinator standby", 30)
        wal_dir = cluster_dir / "wal"
        roles.append(Role("streamingnode", ["streamingnode", *common, "--wal-dir", str(wal_dir)], logs))
        roles.append(Role("querynode", ["querynode", *common], logs))
        port = free_port()
        roles.append(Role("proxy", ["proxy", *common, "--port", str(port)], logs))
        for role in roles[2:]:
            role.wait_for_log("role ready", 60)

        client = MilvusClient(f"http://127.0.0.1:{port}", timeout=30)
        with quiet_pymilvus():  # the first DDL may wait for the streaming node's pchannels
            retry("create before failover", lambda: _create(client, "before"), timeout=60)
        before = _vectors(range(0, 100))
        client.insert("before", before, timeout=10)
        _search_finds(client, "before", before[7])
        assert _ids(client, "before") == set(range(0, 100))
        assert "coordinator active" not in second.log()

        first.kill()
        killed_at = time.monotonic()
        after = _vectors(range(100, 200))
        with quiet_pymilvus():
            retry("create after failover", lambda: _create(client, "after"), timeout=40)
            retry("insert after failover", lambda: client.insert("before", after, timeout=5), timeout=40)
            retry("search after failover", lambda: _search_finds(client, "before", after[3]), timeout=40)
        recovery = time.monotonic() - killed_at
        print(f"coordinator failover: DDL, insert and Strong search work again after {recovery:.2f}s")
        assert "coordinator active" in second.log()
        assert recovery < 20, recovery

        # Nothing lost: both collections, every row from before and after the failover.
        assert {"before", "after"} <= set(client.list_collections(timeout=10))
        assert _ids(client, "before") == set(range(0, 200))
        _search_finds(client, "before", before[42])
        extra = _vectors(range(1000, 1010))
        client.insert("after", extra, timeout=10)
        assert _ids(client, "after") == set(range(1000, 1010))
        client.close()
    except BaseException:
        for role in roles:
            print(f"==== {role.name} ====\n{role.log()[-4000:]}")
        raise
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()
