"""``docker compose up`` of deploy/docker-compose.yml, used the way a user would, on this machine.

The suite (marker ``deploy``; ``make test-deploy``, not part of ``make test``):

1. installs Docker, Compose and debootstrap from Debian if missing, and starts
   ``dockerd`` if no engine runs (stopping it at the end);
2. builds the base image offline (debootstrap + ``docker import``), then the
   Strata image from deploy/docker/Dockerfile;
3. brings the whole compose cluster up (etcd, NATS, S3, Spark master/worker,
   coordinator + standby, two streaming nodes, two query nodes, the proxy),
   every service on the host's network, and waits for every health check;
4. checks that every socket the containers listen on is on 127.0.0.1;
5. runs a pymilvus smoke workload through the proxy: create, insert, flush,
   index, load, search, query;
6. restarts one streaming node container (``docker restart``) and crashes the
   other (SIGKILL of its process; the restart policy brings it back) while a
   client inserts, and checks that every acknowledged row is there afterwards;
7. ``docker compose down -v``, whatever happened.

``-s`` prints how long each phase took.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from tests.cluster.harness import (
    Inserter,
    create_collection,
    query_ids,
    quiet_pymilvus,
    retry,
    search_finds,
    vectors,
    wait_until,
)
from tests.deploy.dockerenv import build_image, compose_command, docker_engine, ensure_base_image, ensure_packages
from tests.harness import REPO, free_port

pytestmark = pytest.mark.deploy

COMPOSE_FILE = REPO / "deploy" / "docker-compose.yml"
PROJECT = "strata-deploy-test"
IMAGE = "strata:deploy-test"
# Every fixed port of the compose file (etcd, nats, s3, spark, the roles); the proxy's is chosen here.
FIXED_PORTS = {23790, 23800, 24222, 28222, 29000, 27077, 28080, 27078, 28081, 19601, 19602, 19611, 19612, 19621, 19622,
               19701, 19702, 19711, 19712, 19721, 19722, 9091}  # the roles' metrics ports
DIM = 16


@dataclass
class Cluster:
    compose: list[str]
    env: dict[str, str]
    proxy_port: int
    logs: Path

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    def run(self, *args: str, timeout: float = 600) -> str:
        cmd = [*self.compose, "-p", PROJECT, "-f", str(COMPOSE_FILE), *args]
        result = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def container(self, service: str) -> str:
        ids = self.run("ps", "-q", service).split()
        assert len(ids) == 1, (service, ids)
        return ids[0]

    def state(self, service: str) -> dict[str, str]:
        fmt = "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}-{{end}} {{.State.ExitCode}} {{.RestartCount}} {{.State.Pid}}"
        status, health, code, restarts, pid = _docker("inspect", "-f", fmt, self.container(service)).split()
        return {"status": status, "health": health, "exit": code, "restarts": restarts, "pid": pid}

    def services(self) -> list[str]:
        return self.run("config", "--services").split()

    def wait_healthy(self, services: list[str], timeout: float) -> None:
        """Every service healthy (s3-init: exited 0); fails at once when one exits or restarts meanwhile."""
        restarts = {s: self.state(s)["restarts"] for s in services}
        deadline = time.monotonic() + timeout
        while True:
            states = {s: self.state(s) for s in services}
            pending = {
                s: st for s, st in states.items()
                if not (st["health"] == "healthy" or (s == "s3-init" and st["status"] == "exited" and st["exit"] == "0"))
            }  # fmt: skip
            if not pending:
                return
            failed = {
                s: st for s, st in pending.items()
                if st["restarts"] != restarts[s] or (st["status"] in ("exited", "dead") and s != "s3-init")
                or (s == "s3-init" and st["status"] == "exited" and st["exit"] != "0")
            }  # fmt: skip
            if failed:
                raise AssertionError(f"services failed while starting: {failed}")
            if time.monotonic() > deadline:
                raise AssertionError(f"not healthy within {timeout}s: {pending}")
            time.sleep(2)

    def dump_logs(self) -> None:
        with contextlib.suppress(Exception):
            text = self.run("logs", "--no-color", "--tail=150", timeout=120)
            (self.logs / "compose.log").write_text(text)
            print(f"==== docker compose logs (tail) ====\n{text[-30000:]}")


def _docker(*args: str, timeout: float = 300) -> str:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"docker {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout.strip()


def _port_free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Phases:
    """Wall-clock time of each phase, printed at the end."""

    def __init__(self) -> None:
        self.times: dict[str, float] = {}
        self._start = time.monotonic()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.monotonic()
        try:
            yield
        finally:
            self.times[name] = time.monotonic() - t

    def report(self) -> None:
        total = time.monotonic() - self._start
        lines = [f"  {name:<40} {secs:7.1f} s" for name, secs in self.times.items()]
        print("compose suite phases:\n" + "\n".join(lines) + f"\n  {'total':<40} {total:7.1f} s")


@pytest.fixture(scope="module")
def phases() -> Iterator[Phases]:
    p = Phases()
    yield p
    p.report()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, phases: Phases) -> Iterator[Cluster]:
    logs = tmp_path_factory.mktemp("deploy-logs")
    with phases.phase("install docker, compose, debootstrap"):
        ensure_packages(logs / "apt.log")
    compose = compose_command()
    assert compose is not None, "no docker compose / docker-compose after installing docker-compose"
    with docker_engine(logs / "dockerd.log"):
        with phases.phase("base image (debootstrap, docker import)"):
            ensure_base_image(logs / "base-image.log")
        with phases.phase("strata image (docker build)"):
            build_image(IMAGE, logs / "build.log")
        busy = sorted(p for p in FIXED_PORTS if not _port_free(p))
        assert not busy, f"ports of the compose cluster are in use on 127.0.0.1: {busy}"
        proxy_port = free_port()
        env = {**os.environ, "STRATA_IMAGE": IMAGE, "STRATA_PROXY_PORT": str(proxy_port)}
        c = Cluster(compose=compose, env=env, proxy_port=proxy_port, logs=logs)
        try:
            with phases.phase("compose up until every service is healthy"):
                c.run("up", "-d", "--no-build", timeout=900)
                c.wait_healthy(c.services(), timeout=300)
            yield c
        except BaseException:
            c.dump_logs()
            raise
        finally:
            with phases.phase("compose down -v"):
                c.run("down", "-v", "--remove-orphans", "--timeout", "30", timeout=600)


def _listening(pids: set[int]) -> list[tuple[str, int, str]]:
    """(local address, port, process) of every TCP/UDP socket the processes ``pids`` listen on."""
    out = subprocess.run(["ss", "-Htulnp"], capture_output=True, text=True, timeout=30, check=True).stdout
    found = []
    for line in out.splitlines():
        fields = line.split()
        local = fields[4]
        for name, pid in re.findall(r'\("([^"]+)",pid=(\d+)', line):
            if int(pid) in pids:
                host, _, port = local.rpartition(":")
                found.append((host.strip("[]"), int(port), name))
    return found


def _container_pids(container: str) -> set[int]:
    # `docker top` lists the host pids of every process of the container.
    lines = _docker("top", container, "-eo", "pid").splitlines()[1:]
    return {int(x) for x in lines if x.strip().isdigit()}


def test_every_service_listens_on_loopback_only(cluster: Cluster) -> None:
    pids: set[int] = set()
    for service in cluster.services():
        if service != "s3-init":
            pids |= _container_pids(cluster.container(service))
    sockets = _listening(pids)
    assert sockets
    outside = [s for s in sockets if s[0] not in ("127.0.0.1", "::1", "::ffff:127.0.0.1")]
    assert not outside, f"listening beyond loopback: {outside}"
    ports = {port for _, port, _ in sockets}
    expected = FIXED_PORTS | {cluster.proxy_port}
    assert expected <= ports, sorted(expected - ports)
    others = sorted({(port, name) for _, port, name in sockets if port not in expected})
    print(f"listening on 127.0.0.1: {sorted(ports)}; beyond the compose file's ports: {others}")


def test_roles_run_as_non_root_and_report_health(cluster: Cluster) -> None:
    for service in ("coordinator", "streamingnode-1", "querynode-1", "proxy"):
        container = cluster.container(service)
        assert _docker("exec", container, "id", "-u") == "10001"
        # The image's HEALTHCHECK command, as Docker runs it.
        assert "SERVING" in _docker("exec", container, "strata", "health")
    # The standby is healthy (alive, ready) but only the active coordinator serves the coordinator API.
    active = subprocess.run(
        ["docker", "exec", cluster.container("coordinator"), "strata", "health", "--service", "strata.coordinator.Coordinator"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    standby = subprocess.run(
        ["docker", "exec", cluster.container("coordinator-standby"), "strata", "health", "--service", "strata.coordinator.Coordinator"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert active.returncode == 0, active
    assert standby.returncode == 1 and "NOT_SERVING" in standby.stdout, standby


def test_pymilvus_smoke_workload(cluster: Cluster, phases: Phases) -> None:
    with phases.phase("pymilvus smoke workload"):
        client = MilvusClient(cluster.uri, timeout=60)
        try:
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
            schema.add_field("title", DataType.VARCHAR, max_length=64)
            schema.add_field("bucket", DataType.INT64)
            with quiet_pymilvus():  # the first DDL may wait for the pchannels to be assigned
                retry("create collection", lambda: client.create_collection("smoke", schema=schema, num_shards=2), timeout=120)
            rng = np.random.default_rng(7)
            vecs = rng.standard_normal((2000, DIM)).astype(np.float32)
            rows = [{"id": i, "vector": vecs[i].tolist(), "title": f"doc-{i}", "bucket": i % 100} for i in range(2000)]
            for start in range(0, 2000, 500):
                assert client.insert("smoke", rows[start : start + 500])["insert_count"] == 500
            client.flush("smoke", timeout=120)
            index = client.prepare_index_params()
            index.add_index("vector", index_type="HNSW", metric_type="L2", params={"M": 16, "efConstruction": 64})
            client.create_index("smoke", index)
            client.load_collection("smoke", timeout=120)
            hits = client.search("smoke", data=[vecs[123].tolist()], limit=3, output_fields=["title"], consistency_level="Strong")
            assert hits[0][0]["id"] == 123 and hits[0][0]["entity"]["title"] == "doc-123", hits
            high = client.query("smoke", filter="bucket >= 90", output_fields=["id"], consistency_level="Strong")
            assert sorted(r["id"] for r in high) == [i for i in range(2000) if i % 100 >= 90]
            count = client.query("smoke", filter="", output_fields=["count(*)"], consistency_level="Strong")
            assert count[0]["count(*)"] == 2000
            got = client.get("smoke", ids=[5, 1999], output_fields=["title"])
            assert sorted(r["title"] for r in got) == ["doc-1999", "doc-5"]
        finally:
            client.close()


def _insert_through(cluster: Cluster, disruption: str, disrupt: Callable[[], None]) -> None:
    """Insert continuously while ``disrupt()`` runs; every acknowledged row must be readable after."""
    client = MilvusClient(cluster.uri, timeout=60)
    collection = f"writes_{disruption}"
    try:
        with quiet_pymilvus():
            retry("create", lambda: create_collection(client, collection, dim=8, num_shards=4), timeout=120)
            inserter = Inserter(cluster.uri, collection, first_id=1_000_000, dim=8)
            inserter.start()
            try:
                wait_until("inserts before", lambda: len(inserter.acked) >= 10, timeout=60)
                before = len(inserter.acked)
                disrupt()
                wait_until("inserts after", lambda: len(inserter.acked) >= before + 20, timeout=180)
            finally:
                inserter.stop.set()
                inserter.join(60)
            acked = set(inserter.acked_ids())
            ids = retry("query after", lambda: query_ids(client, collection), timeout=120)
        assert acked, "nothing was acknowledged"
        missing = acked - set(ids)
        assert not missing, f"{len(missing)} acknowledged rows lost after {disruption}: {sorted(missing)[:20]}"
        assert set(ids) <= inserter.attempted_ids()
        last = inserter.acked[-1]
        search_finds(client, collection, vectors(range(last.ids.start, last.ids.start + 1), 8)[0])
        print(f"{disruption}: {len(acked)} acknowledged rows, all present; {inserter.failures} failed attempts retried")
    finally:
        client.close()


def test_restarting_a_streaming_node_loses_no_acknowledged_row(cluster: Cluster, phases: Phases) -> None:
    with phases.phase("docker restart streamingnode-1 under inserts"):
        before = cluster.state("streamingnode-1")

        def restart() -> None:
            _docker("restart", "-t", "30", cluster.container("streamingnode-1"))
            cluster.wait_healthy(["streamingnode-1"], timeout=120)

        _insert_through(cluster, "restart", restart)
        after = cluster.state("streamingnode-1")
        assert after["pid"] != before["pid"] and after["health"] == "healthy"


def test_a_crashed_streaming_node_is_restarted_by_its_policy(cluster: Cluster, phases: Phases) -> None:
    with phases.phase("SIGKILL streamingnode-2 under inserts"):
        before = cluster.state("streamingnode-2")

        def crash() -> None:
            os.kill(int(before["pid"]), signal.SIGKILL)  # the role's process dies; Docker sees exit 137
            deadline = time.monotonic() + 60
            while cluster.state("streamingnode-2")["restarts"] == before["restarts"]:
                assert time.monotonic() < deadline, "restart policy did not restart streamingnode-2"
                time.sleep(0.5)
            cluster.wait_healthy(["streamingnode-2"], timeout=120)

        _insert_through(cluster, "crash", crash)
        assert int(cluster.state("streamingnode-2")["restarts"]) == int(before["restarts"]) + 1
