"""The reference peer: ``milvus-lite server`` as a child process on loopback, always stopped.

milvus-lite 3.2.2 is a pure-Python Milvus that serves the same ``MilvusService``
gRPC API as Milvus standalone. Its server binds ``0.0.0.0`` unless told
otherwise, so the peer always passes ``--host 127.0.0.1``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.harness import free_port

HOST = "127.0.0.1"


class MilvusLitePeer:
    """``python -m milvus_lite server`` (the ``milvus-lite server`` command) in its own process group.

    ``start()`` returns once a pymilvus client can connect and list collections;
    ``stop()`` SIGTERMs the group and waits (SIGTERM rather than SIGINT: a
    child of a shell that runs it in the background ignores SIGINT; the data
    directory is a throwaway), ``kill()`` SIGKILLs the whole group and waits
    until no member is left. ``run_milvus_lite`` pairs them so the process
    never outlives its caller.
    """

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = data_dir.parent / f"{data_dir.name}-milvus-lite.log"

    @property
    def uri(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed below, the child keeps its copy
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "milvus_lite", "server",
             "--data-dir", str(self.data_dir), "--host", HOST, "--port", str(self.port)],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"milvus-lite exited early with {self.proc.returncode}:\n{self.logs()}")
            if self._answers():
                return
            time.sleep(0.1)
        self.kill()
        raise TimeoutError(f"milvus-lite not ready in {timeout}s:\n{self.logs()}")

    def _answers(self) -> bool:
        """Whether pymilvus can connect and list collections (the server is serving)."""
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        try:
            client = MilvusClient(self.uri, timeout=1.0)
        except MilvusException:
            return False
        try:
            client.list_collections(timeout=1.0)
            return True
        except MilvusException:
            return False
        finally:
            client.close()

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:] if self.log_path.exists() else ""

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the group, then wait; SIGKILL it if the server does not exit."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.kill()

    def kill(self) -> None:
        """SIGKILL the whole process group and wait until none of it is left."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _group_alive(self.proc.pid):
            time.sleep(0.05)


@contextlib.contextmanager
def run_milvus_lite(data_dir: Path) -> Iterator[MilvusLitePeer]:
    """A started peer for the block; stopped and its process group killed however the block ends."""
    peer = MilvusLitePeer(data_dir)
    try:
        peer.start()
        yield peer
    finally:
        try:
            peer.stop()
        finally:
            peer.kill()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
