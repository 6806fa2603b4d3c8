"""``strata standalone``: etcd, the coordinator and one node process on 127.0.0.1.

The coordinator runs in its own process; the streaming node, the query node and
the proxy share the other (``strata standalone-node``,
``services/standalone_node.py``), as Milvus standalone is one process: the
proxy reads from the delegators and appends to the WALs without gRPC. Every
role still has its own gRPC server on a free port and its own etcd session, so
they find each other exactly as in a cluster. The launcher logs one
``standalone ready`` line once the proxy answers and every pchannel is
assigned, and on SIGINT/SIGTERM stops the processes in reverse order, then
etcd. Children die with the launcher (``PR_SET_PDEATHSIG``) if it is killed.

etcd is watched: if it exits (killed, or stopped by a full disk) it is started
again on the same data directory and ports, with a backoff while it keeps
failing, and a ``NOSPACE`` alarm is cleared (``services/etcd/supervisor.py``);
the roles ride out the gap. A role that exits still stops everything (status 1).
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import structlog

from services.cli import NODE_COMMAND
from services.etcd.metastore import MetaStore
from services.etcd.process import EtcdProcess
from services.etcd.supervisor import EtcdSupervisor
from services.procutil import die_with_parent

log = structlog.get_logger().bind(component="standalone")

# The coordinator, then the streaming node, the query node and the proxy in one process.
ROLE_ORDER = ("coordinator", NODE_COMMAND)


def _spawn(role: str, args: list[str], logs: Path) -> subprocess.Popen[bytes]:
    out = open(logs / f"{role}.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [sys.executable, "-m", "services.cli", role, *args],
        stdout=out,
        stderr=out,
        stdin=subprocess.DEVNULL,
        preexec_fn=die_with_parent,
    )
    out.close()
    return proc


async def _clear_stale_sessions(endpoint: str) -> None:
    # The embedded cluster is ours alone: sessions left by a killed run belong to dead processes.
    store = await MetaStore.connect(endpoint)
    try:
        await store.delete_prefix("session/")
    finally:
        await store.close()


async def _cluster_ready(endpoint: str, port: int, pchannels: int) -> bool:
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) != 0:
            return False
    try:
        store = await MetaStore.connect(endpoint)
        try:
            kvs = await store.scan("streamingcoord/pchannel/")
        finally:
            await store.close()
    except Exception:  # etcd away (the supervisor restarts it): not ready yet
        return False
    assigned = [kv for kv in kvs if json.loads(kv.value)["state"] == "ASSIGNED"]
    return len(assigned) >= pchannels


def run_standalone(
    *, data_dir: str, port: int, etcd_binary: str | None, pchannels: int, storage: str | None = None
) -> int:
    root = Path(data_dir).resolve()
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    stop_requested = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    etcd = EtcdProcess(root / "etcd", binary=etcd_binary)
    etcd.start()
    supervisor = EtcdSupervisor(etcd)

    children: dict[str, subprocess.Popen[bytes]] = {}
    code = 0
    try:
        asyncio.run(_clear_stale_sessions(etcd.endpoint))
        common = ["--etcd", etcd.endpoint]
        storage_args = ["--storage", storage or (root / "storage").resolve().as_uri()]
        role_args = {
            "coordinator": [*common, "--pchannels", str(pchannels), *storage_args],
            NODE_COMMAND: [*common, "--wal-dir", str(root / "wal"), *storage_args, "--proxy-port", str(port)],
        }
        for role in ROLE_ORDER:
            children[role] = _spawn(role, role_args[role], logs)
        ready = False
        deadline = time.monotonic() + 120
        while not stop_requested:
            supervisor.check()
            dead = [r for r, p in children.items() if p.poll() is not None]
            if dead:
                log.error("role exited", roles=dead, logs=str(logs))
                code = 1
                break
            if not ready:
                if asyncio.run(_cluster_ready(etcd.endpoint, port, pchannels)):
                    ready = True
                    log.info("standalone ready", address=f"127.0.0.1:{port}", data_dir=str(root))
                elif time.monotonic() > deadline:
                    log.error("standalone did not become ready", logs=str(logs))
                    code = 1
                    break
            time.sleep(0.2)
    finally:
        log.info("standalone stopping")
        for role in reversed(ROLE_ORDER):
            proc = children.get(role)
            if proc is None or proc.poll() is not None:
                continue
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                log.warning("role did not stop in time, killing", role=role)
                proc.kill()
                proc.wait()
        etcd.stop()
        log.info("standalone stopped")
    return code
