"""Process sessions: ``<root>/session/<role>-<serverID>`` under an etcd lease.

A process is alive while its session key exists. The key is attached to a
lease (TTL 15 s by default) that a keep-alive task refreshes; if the process
dies the lease expires and the key disappears, which is how the coordinator
learns that a node is gone.

A session can also be *lost* while the process lives: etcd unreachable or the
process frozen for about a TTL. The coordinator then treats the node as gone
and hands its work to others, so the node must stop serving that work: the
keep-alive notices (``common.etcd.lease``), awaits the owner's ``on_lost``
(release every channel, every delegator), and registers again under a new
server id, as a new node, once etcd answers. ``on_registered`` tells the owner
the new id.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import aetcd
import structlog

from common.etcd.lease import keep_alive
from common.etcd.metastore import MetaStore
from common.statemetrics import GaugeSample, StateMetrics
from common.tasks import BackgroundTasks

SESSION_PREFIX = "session/"
_SERVER_ID_KEY = "session-id-counter"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    role: str
    server_id: int
    address: str

    @property
    def key(self) -> str:
        return f"{SESSION_PREFIX}{self.role}-{self.server_id}"

    def to_json(self) -> bytes:
        return json.dumps({"role": self.role, "server_id": self.server_id, "address": self.address}).encode()

    @staticmethod
    def from_json(raw: bytes) -> SessionInfo:
        d = json.loads(raw)
        return SessionInfo(role=d["role"], server_id=int(d["server_id"]), address=d["address"])


async def allocate_server_id(store: MetaStore) -> int:
    """A cluster-unique, never reused server id (compare-and-swap counter)."""
    client = store.client
    tx = client.transactions
    key = store.full_key(_SERVER_ID_KEY)
    while True:
        current = await client.get(key)
        if current is None:
            ok, _ = await client.transaction(
                compare=[tx.version(key) == 0], success=[tx.put(key, b"1")], failure=[]
            )
            if ok:
                return 1
            continue
        nxt = int(current.value) + 1
        ok, _ = await client.transaction(
            compare=[tx.value(key) == current.value], success=[tx.put(key, str(nxt).encode())], failure=[]
        )
        if ok:
            return nxt


class Session:
    """This process's registration. ``start()`` registers, ``stop()`` revokes."""

    def __init__(
        self,
        store: MetaStore,
        role: str,
        address: str,
        *,
        ttl_seconds: int = 15,
        on_lost: Callable[[], Awaitable[None]] | None = None,
        on_registered: Callable[[SessionInfo], None] | None = None,
        retry_seconds: float = 1.0,
    ) -> None:
        self._store = store
        self._role = role
        self._address = address
        self._ttl = ttl_seconds
        self._on_lost = on_lost
        self._on_registered = on_registered
        self._retry = retry_seconds
        self._lease: aetcd.Lease | None = None
        self.info: SessionInfo | None = None
        self.lost_count = 0
        self.alive = False  # registered and its lease kept alive (False from a lost lease to the next registration)
        self._log = structlog.get_logger().bind(component="session", role=role)
        self._tasks = BackgroundTasks("session", role=role)
        self._metrics = StateMetrics(self._samples)

    def _samples(self) -> Iterator[GaugeSample]:
        labels = {"role": self._role, "server_id": str(self.info.server_id) if self.info is not None else ""}
        yield GaugeSample(name="strata_etcd_session_alive", help="1 while the role's etcd session holds its lease",
                          labels=labels, value=1 if self.alive else 0)
        yield GaugeSample(name="strata_etcd_session_lost", help="Leases the role's session lost since it started",
                          labels=labels, value=self.lost_count)

    @property
    def server_id(self) -> int:
        assert self.info is not None, "session not started"
        return self.info.server_id

    async def start(self, server_id: int | None = None) -> SessionInfo:
        info = await self._register(server_id)
        self._metrics.start()
        self._tasks.start(self._run(), name=f"session-{self._role}")
        return info

    async def _register(self, server_id: int | None) -> SessionInfo:
        sid = server_id if server_id is not None else await allocate_server_id(self._store)
        info = SessionInfo(role=self._role, server_id=sid, address=self._address)
        lease = await self._store.client.lease(self._ttl)
        await self._store.put(info.key, info.to_json(), lease=lease)
        self.info, self._lease = info, lease
        self.alive = True
        self._log.info("session registered", server_id=sid, address=self._address)
        if self._on_registered is not None:
            self._on_registered(info)
        return info

    async def _run(self) -> None:
        """Keep the lease alive; when it is lost, let the owner release its work, then register anew."""
        while True:
            assert self._lease is not None
            reason: list[str] = []
            await keep_alive(self._lease, self._ttl, reason.append, self._log)
            self.lost_count += 1
            self.alive = False
            self._log.error("session lost", reason=reason[0] if reason else "", server_id=self.server_id)
            if self._on_lost is not None:
                try:
                    await self._on_lost()
                except asyncio.CancelledError:
                    raise
                except Exception:  # task boundary: still register again
                    self._log.exception("releasing work after a lost session failed")
            while True:
                try:
                    async with asyncio.timeout(max(self._ttl, 5)):
                        await self._register(None)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # etcd still away: try again
                    self._log.warning("session registration failed", error=str(err) or type(err).__name__)
                    await asyncio.sleep(self._retry)

    async def stop(self) -> None:
        self.alive = False
        self._metrics.stop()
        await self._tasks.stop()
        if self._lease is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await self._lease.revoke()
        self._log.info("session revoked")


async def list_sessions(store: MetaStore, role: str) -> list[SessionInfo]:
    kvs = await store.scan(f"{SESSION_PREFIX}{role}-")
    return [SessionInfo.from_json(kv.value) for kv in kvs]


async def watch_sessions(store: MetaStore, role: str) -> AsyncIterator[dict[int, SessionInfo]]:
    """Yield the full set of live sessions of ``role`` now and after every change.

    The watch starts at the revision after the scan, so no change between the two is missed.
    """
    prefix = f"{SESSION_PREFIX}{role}-"
    kvs, revision = await store.scan_at(prefix)
    current = {s.server_id: s for s in (SessionInfo.from_json(kv.value) for kv in kvs)}
    yield dict(current)
    async for ev in store.watch_prefix(prefix, start_revision=revision + 1):
        sid = int(ev.key.rsplit("-", 1)[1])
        if ev.value is None:
            current.pop(sid, None)
        else:
            current[sid] = SessionInfo.from_json(ev.value)
        yield dict(current)


async def follow_sessions(
    store: MetaStore, role: str, *, retry_seconds: float = 0.5
) -> AsyncIterator[dict[int, SessionInfo]]:
    """Like :func:`watch_sessions`, forever: a broken etcd watch is logged and re-established."""
    log = structlog.get_logger().bind(component="session-watch", role=role)
    while True:
        try:
            async for nodes in watch_sessions(store, role):
                yield nodes
        except asyncio.CancelledError:
            raise
        except Exception:  # a long-lived watch must outlive etcd hiccups
            log.exception("session watch failed, re-watching")
            await asyncio.sleep(retry_seconds)
