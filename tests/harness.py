"""Test harness: real processes on loopback, always stopped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from common.ports import free_port

REPO = Path(__file__).resolve().parent.parent


class Standalone:
    """``strata standalone`` as a child process in its own process group."""

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        env: dict[str, str] | None = None,
        *,
        log_path: Path | None = None,
        repo: Path = REPO,
    ) -> None:
        """``env``: added to the environment of every process it starts; ``log_path``: the launcher's
        own output (default: beside ``data_dir``); ``repo``: the checkout whose code runs (benchmarks
        compare two)."""
        self.repo = repo
        self.data_dir = data_dir
        self.port = port or free_port()
        self.env = dict(env or {})
        # The RESTful API's port (proxy.http.port), unless ``env`` names one.
        self.env.setdefault("STRATA_PROXY_HTTP_PORT", str(free_port()))
        self.http_port = int(self.env["STRATA_PROXY_HTTP_PORT"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}-standalone.log"

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def http_uri(self) -> str:
        """Where the RESTful API listens (``/v2/vectordb/...`` under it)."""
        return f"http://127.0.0.1:{self.http_port}"

    def start(self, timeout: float = 90.0) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed below, child keeps its copy
        env = {**os.environ, "STRATA_LOG_LEVEL": os.environ.get("STRATA_LOG_LEVEL", "INFO"), **self.env}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "launch.cli", "standalone", "--data-dir", str(self.data_dir), "--port", str(self.port)],
            cwd=self.repo,
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"standalone exited early:\n{self.logs()}")
            if b"standalone ready" in self.log_path.read_bytes()[offset:]:
                return
            time.sleep(0.1)
        self.kill()
        raise TimeoutError(f"standalone not ready in {timeout}s:\n{self.logs()}")

    def logs(self) -> str:
        parts = [self.log_path.read_text(errors="replace")[-5000:]] if self.log_path.exists() else []
        for f in sorted((self.data_dir / "logs").glob("*.log")):
            parts.append(f"--- {f.name}\n" + f.read_text(errors="replace")[-5000:])
        return "\n".join(parts)

    def keep_logs(self) -> Path | None:
        """Copy the roles' whole logs beside the launcher's log (outside ``data_dir``, which a test
        may hold on a tmpfs it unmounts); returns where, or None if there are none."""
        source = self.data_dir / "logs"
        if not source.is_dir():
            return None
        target = self.log_path.parent / f"{self.log_path.stem}-roles"
        shutil.copytree(source, target, dirs_exist_ok=True)
        return target

    def children(self) -> dict[str, int]:
        """The launcher's live child processes: ``{"etcd" | role: pid}``."""
        assert self.proc is not None
        out: dict[str, int] = {}
        try:
            pids = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except FileNotFoundError:
            return out
        for pid in map(int, pids):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except FileNotFoundError:
                continue
            if Path(argv[0].decode()).name == "etcd":
                out["etcd"] = pid
            elif b"launch.cli" in argv and len(argv) > argv.index(b"launch.cli") + 1:
                out[argv[argv.index(b"launch.cli") + 1].decode()] = pid
        return out

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM and wait: the clean shutdown path."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL the whole process group (launcher, roles, etcd)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        # Children die with their parent, but make sure none outlives the test.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(self.proc.pid):
            time.sleep(0.05)


@contextlib.contextmanager
def dump_logs_on_failure(standalone: Standalone) -> Iterator[None]:
    """Print the cluster's logs if the block fails, so a CI failure can be diagnosed."""
    try:
        yield
    except BaseException:
        print(f"==== logs of the standalone in {standalone.data_dir} ====\n{standalone.logs()}")
        kept = standalone.keep_logs()
        if kept is not None:
            print(f"==== the whole logs are kept in {kept} ====")
        raise


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
