"""``strata standalone``: etcd, the coordinator and one node process on 127.0.0.1.

The coordinator runs in its own process; the streaming node, the query node and
the proxy share the other (``strata standalone-node``,
``launch/standalone_node.py``), as Milvus standalone is one process: the
proxy reads from the delegators and appends to the WALs without gRPC. Every
role still has its own gRPC server on a free port and its own etcd session, so
they find each other exactly as in a cluster. The launcher logs one
``standalone ready`` line once the proxy answers and every pchannel is
assigned, and on SIGINT/SIGTERM stops the processes in reverse order, then
etcd. Children die with the launcher (``PR_SET_PDEATHSIG``) if it is killed.

etcd is watched: if it exits (killed, or stopped by a full disk) it is started
again on the same data directory and ports, with a backoff while it keeps
failing, and a ``NOSPACE`` alarm is cleared (``common/etcd/supervisor.py``);
the roles ride out the gap. So are the roles: one that exits (killed, crashed,
or a coordinator that lost its lease) is started again with the same
arguments, at once and then with a backoff while it keeps exiting
(``common/restarts.py``); the sessions the dead process left in etcd are
removed first, so the coordinator hands its pchannels to the new process (and
a new coordinator wins the election) at once instead of after the lease TTL.
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

from common.etcd.metastore import MetaStore
from common.etcd.process import EtcdProcess
from common.etcd.supervisor import EtcdSupervisor
from common.procutil import die_with_parent
from common.restarts import RestartBackoff
from launch.cli import NODE_COMMAND

log = structlog.get_logger().bind(component="standalone")

# The coordinator, then the streaming node, the query node and the proxy in one process.
ROLE_ORDER = ("coordinator", NODE_COMMAND)
# The etcd sessions each process holds (``common/etcd/session.py``; the coordinator's leader key too).
ROLE_SESSIONS = {
    "coordinator": ("session/coordinator",),
    NODE_COMMAND: ("session/streamingnode-", "session/querynode-", "session/proxy-"),
}


def _spawn(role: str, args: list[str], logs: Path) -> subprocess.Popen[bytes]:
    out = open(logs / f"{role}.log", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [sys.executable, "-m", "launch.cli", role, *args],
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


async def _clear_sessions(endpoint: str, prefixes: tuple[str, ...]) -> None:
    """Remove the sessions of a process that died: in the embedded cluster no other holds these."""
    store = await MetaStore.connect(endpoint)
    try:
        for prefix in prefixes:
            await store.delete_prefix(prefix)
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
    *,
    data_dir: str,
    port: int,
    etcd_binary: str | None,
    pchannels: int,
    storage: str | None = None,
    coordinator_args: list[str] | None = None,
) -> int:
    """Run until SIGINT/SIGTERM; ``coordinator_args``: extra flags of the coordinator (its metrics port)."""
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
            "coordinator": [*common, "--pchannels", str(pchannels), *storage_args, *(coordinator_args or [])],
            NODE_COMMAND: [*common, "--wal-dir", str(root / "wal"), *storage_args, "--proxy-port", str(port)],
        }
        backoffs = {role: RestartBackoff() for role in ROLE_ORDER}
        restart_at: dict[str, float] = {}
        for role in ROLE_ORDER:
            children[role] = _spawn(role, role_args[role], logs)
            backoffs[role].started(time.monotonic())
        ready = False
        deadline = time.monotonic() + 120
        while not stop_requested:
            supervisor.check()
            now = time.monotonic()
            for role, proc in children.items():
                if proc.poll() is not None and role not in restart_at:
                    restart_at[role] = backoffs[role].exited(now)
                    log.error("role exited", role=role, exit_code=proc.returncode,
                              restart_in=round(restart_at[role] - now, 1), logs=str(logs))
            for role, at in list(restart_at.items()):
                if now < at:
                    continue
                try:
                    asyncio.run(_clear_sessions(etcd.endpoint, ROLE_SESSIONS[role]))
                except Exception as err:  # etcd away (its supervisor restarts it): try again shortly
                    restart_at[role] = now + 1.0
                    log.warning("role restart waits for etcd", role=role, error=str(err) or type(err).__name__)
                    continue
                children[role] = _spawn(role, role_args[role], logs)
                backoffs[role].started(now)
                del restart_at[role]
                log.warning("role restarted", role=role, pid=children[role].pid, restarts=backoffs[role].restarts)
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
            child = children.get(role)
            if child is None or child.poll() is not None:
                continue
            proc = child
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
