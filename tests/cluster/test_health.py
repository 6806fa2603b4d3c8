"""Every role answers ``grpc.health.v1`` as a real process, checked with ``strata health``.

etcd, two coordinators (one active, one standby), a streaming node, a query
node and a proxy, each its own process on a fixed 127.0.0.1 port. Each role
is SERVING once ready; the standby is SERVING as a whole (it is alive and
ready to take over) but its ``strata.coordinator.Coordinator`` service is
NOT_SERVING until it wins the election; a stopped role answers nothing.
``--pid`` finds a role's address from its command line, config file and
environment, as the container image's HEALTHCHECK does.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from common.etcd.process import EtcdProcess
from coordinator.server import COORDINATOR_SERVICE
from proxy.server import MILVUS_SERVICE
from tests.cluster.harness import Role, wait_until
from tests.harness import REPO, free_port

COORDINATOR_TTL_SECONDS = 3
ROOT = "health"


@pytest.fixture()
def cluster_dir(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "logs").mkdir()
    yield tmp_path


def health(*args: str) -> subprocess.CompletedProcess[str]:
    """``strata health ARGS`` as a separate process, the way a probe runs it."""
    return subprocess.run(
        [sys.executable, "-m", "launch.cli", "health", "--timeout", "2", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )


def serving(*args: str) -> bool:
    result = health(*args)
    assert result.returncode in (0, 1), result
    return result.returncode == 0


@pytest.mark.timeout(150)
def test_every_role_reports_serving_and_the_standby_only_as_a_whole(cluster_dir: Path) -> None:
    logs = cluster_dir / "logs"
    etcd = EtcdProcess(cluster_dir / "etcd")
    roles: list[Role] = []
    ports = {name: free_port() for name in ("coordinator-1", "coordinator-2", "streamingnode", "querynode", "proxy")}
    address = {name: f"127.0.0.1:{port}" for name, port in ports.items()}
    try:
        etcd.start()
        common = ["--etcd", etcd.endpoint, "--etcd-root", ROOT]
        storage = ["--storage", (cluster_dir / "storage").as_uri()]
        coord_env = {"STRATA_COMMON_SESSION_TTL_SECONDS": str(COORDINATOR_TTL_SECONDS)}
        first = Role("coordinator-1", ["coordinator", *common, "--port", str(ports["coordinator-1"])], logs, coord_env)
        roles.append(first)
        first.wait_for_log("coordinator active", 30)
        second = Role("coordinator-2", ["coordinator", *common, "--port", str(ports["coordinator-2"])], logs, coord_env)
        roles.append(second)
        second.wait_for_log("coordinator standby", 30)
        wal = ["--wal-dir", str(cluster_dir / "wal")]
        roles.append(Role("streamingnode", ["streamingnode", *common, *storage, *wal, "--port", str(ports["streamingnode"])], logs))
        roles.append(Role("querynode", ["querynode", *common, *storage, "--port", str(ports["querynode"])], logs))
        # The proxy takes its port from a config file and its etcd from the environment, both
        # named only in its environment: what --pid must resolve the way the proxy did.
        (cluster_dir / "proxy.yaml").write_text(f"proxy: {{port: {ports['proxy']}}}\n")
        proxy_env = {"STRATA_ETCD": etcd.endpoint, "STRATA_CONFIG": str(cluster_dir / "proxy.yaml")}
        proxy = Role("proxy", ["proxy", "--etcd-root", ROOT], logs, proxy_env)
        roles.append(proxy)
        for role in roles[2:]:
            role.wait_for_log("role ready", 60)

        for name in ("coordinator-1", "streamingnode", "querynode", "proxy"):
            assert serving(address[name]), name
        assert serving(address["proxy"], "--service", MILVUS_SERVICE)
        assert serving(address["coordinator-1"], "--service", COORDINATOR_SERVICE)
        # The standby is alive (liveness and readiness pass) but does not lead.
        assert serving(address["coordinator-2"])
        result = health(address["coordinator-2"], "--service", COORDINATOR_SERVICE)
        assert result.returncode == 1 and "NOT_SERVING" in result.stdout, result
        # An unknown service name is not SERVING.
        result = health(address["proxy"], "--service", "strata.nothing.Here")
        assert result.returncode == 1 and "NOT_FOUND" in result.stderr, result

        # The image's HEALTHCHECK: the address comes from the role process itself.
        result = health("--pid", str(proxy.pid))
        assert result.returncode == 0, result
        assert address["proxy"] in result.stdout

        # The standby takes over: its coordinator service becomes SERVING.
        first.kill()
        wait_until("standby leads", lambda: serving(address["coordinator-2"], "--service", COORDINATOR_SERVICE), 30)
        assert not serving(address["coordinator-1"])

        # A stopped role answers no health check.
        proxy.send_signal(signal.SIGTERM)
        proxy.proc.wait(30)
        assert proxy.exited() == 0
        started = time.monotonic()
        assert not serving(address["proxy"])
        assert time.monotonic() - started < 10
    except BaseException:
        for role in roles:
            print(f"==== {role.name} ====\n{role.log()[-4000:]}")
        raise
    finally:
        for role in reversed(roles):
            role.kill()
        etcd.stop()
