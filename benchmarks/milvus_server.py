"""Real Milvus 2.3.5 standalone (the ``milvus==2.3.5`` wheel's ``milvus-server``) on loopback, for benchmarks.

The wheel runs on Python 3.11 and pins nothing the benchmark's venv has, so it
lives in a venv of its own:

    python3.11 -m venv /tmp/milvus235 && /tmp/milvus235/bin/pip install milvus==2.3.5

``install(venv, log)`` makes that venv on first use (``compare.py`` keeps it
under ``benchmarks/.cache/milvus-2.3.5``, outside git) and marks it complete
with a stamp file, so an interrupted install is redone, not half used.

``milvus-server --data DIR`` unpacks the real ``milvus`` binary and its
libraries (knowhere, segcore: the C++ of Milvus 2.3.5) under ``DIR/bin`` and
runs ``milvus run standalone`` with an embedded etcd and rocksmq; it is ready
in 10-40 s. Its gRPC servers listen on every interface (Milvus 2.3 has no
setting for the listen address); every component is told to register
``127.0.0.1`` as its address, so its own calls between components and this
benchmark's calls stay on loopback. The wrapper picks free ports from its
defaults (19530, 53100, ...) on 127.0.0.1 for the ports not given.

Its embedded etcd's peer port is 2380 whatever ``--etcd-port`` says: one
instance on the machine at a time. ``milvus_235()`` waits up to
``port_wait`` s for 2380 to be free and fails with that reason otherwise.

``milvus_235()`` starts it in its own session (process group) and always ends
the whole group (SIGTERM, then SIGKILL), also on an error or Ctrl-C: the
wrapper ignores SIGTERM's meaning for its child, so the group is what counts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
from compare_servers import HOST, RssSampler, Server, stop_group, tail
from pymilvus import MilvusClient

from tests.harness import free_port

DEFAULT_VENV = Path("/tmp/milvus235")
WHEEL = "milvus==2.3.5"
STAMP = ".installed-milvus-2.3.5"
#: The embedded etcd's peer port: fixed, so two milvus-servers cannot run at once.
ETCD_PEER_PORT = 2380
#: Components whose ``ip`` (the address registered for other components) is set to loopback.
COMPONENTS = ("rootCoord", "proxy", "queryCoord", "queryNode", "indexNode", "dataCoord", "dataNode")


def executable(venv: Path) -> Path:
    exe = venv / "bin" / "milvus-server"
    if not exe.exists():
        raise FileNotFoundError(f"{exe} is missing: python3.11 -m venv {venv} && {venv}/bin/pip install {WHEEL}")
    return exe


def install(venv: Path, log: Callable[[str], None], python: str = sys.executable) -> Path:
    """``milvus-server`` of ``venv``, made first (a venv of ``python`` with the wheel) unless already there.

    A venv with the executable but no stamp (made by hand, as /tmp/milvus235) is used as it is; a
    directory with neither is an interrupted install: removed and made again."""
    exe = venv / "bin" / "milvus-server"
    if exe.exists() or (venv / STAMP).exists():
        return executable(venv)
    if venv.exists():
        shutil.rmtree(venv)
    log(f"installing {WHEEL} into {venv} (once)")
    t = time.monotonic()
    try:
        subprocess.run([python, "-m", "venv", str(venv)], check=True, stdin=subprocess.DEVNULL)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, WHEEL], check=True, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError) as err:
        shutil.rmtree(venv, ignore_errors=True)
        raise RuntimeError(f"could not install {WHEEL} into {venv}: {err}") from err
    (venv / STAMP).touch()
    log(f"installed {WHEEL} in {time.monotonic() - t:.0f}s")
    return executable(venv)


def _port_busy(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, port)) == 0


def _wait_peer_port(timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _port_busy(ETCD_PEER_PORT):
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"port {ETCD_PEER_PORT} (Milvus's embedded etcd peer port) is in use after {timeout:.0f}s: "
                "another milvus-server is running; one at a time on a machine"
            )
        time.sleep(2.0)


def _role(proc: psutil.Process) -> str:
    return "milvus" if proc.name() == "milvus" else "wrapper"


@contextlib.contextmanager
def milvus_235(
    workdir: Path, venv: Path = DEFAULT_VENV, timeout: float = 180.0, port_wait: float = 0.0
) -> Iterator[Server]:
    """Milvus 2.3.5 standalone on a free loopback proxy port; yields a ``Server`` (RSS sampled per process)."""
    exe = executable(venv)
    _wait_peer_port(port_wait)
    workdir.mkdir(parents=True, exist_ok=True)
    port, etcd_port = free_port(), free_port()
    log_path = workdir / "milvus-server.log"
    args = [str(exe), "--data", str(workdir / "milvus"), "--proxy-port", str(port), "--etcd-port", str(etcd_port)]
    for component in COMPONENTS:
        args += ["--extra-config", f"{component}.ip={HOST}"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ}
        )
    try:
        uri = f"http://{HOST}:{port}"
        _wait_ready(proc, uri, workdir, timeout)
        sampler = RssSampler(proc.pid, _role)
        sampler.start()
        server = Server(name="Milvus 2.3.5", uri=uri, sampler=sampler, log_path=log_path)
        try:
            yield server
        finally:
            server.peak_rss_mib = sampler.stop()
    finally:
        stop_group(proc)


def _wait_ready(proc: subprocess.Popen[bytes], uri: str, workdir: Path, timeout: float) -> None:
    """Until pymilvus lists collections (the proxy is serving); raises if the server exits or times out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"milvus-server exited with {proc.returncode}:\n{_logs(workdir)}")
        try:
            client = MilvusClient(uri, timeout=2.0, dedicated=True)
        except Exception:  # not listening yet: any connect error means "try again"
            time.sleep(0.5)
            continue
        try:
            client.list_collections(timeout=2.0)
            return
        except Exception:
            time.sleep(0.5)
        finally:
            client.close()
    raise TimeoutError(f"milvus-server not ready in {timeout:.0f}s:\n{_logs(workdir)}")


def _logs(workdir: Path) -> str:
    return "\n".join(
        f"--- {p.name}\n{tail(p)}"
        for p in [workdir / "milvus-server.log", *sorted((workdir / "milvus" / "logs").glob("milvus-*.log"))]
    )
