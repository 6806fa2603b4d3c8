"""The pchannel balancer: places pchannels on live streaming nodes with terms.

Round (on a timer, on a node-set change, on a reported error):
1. the policy (``policy.BalancePolicy``) picks the moves: every channel not
   ASSIGNED to a live node, or else at most one rebalance move;
2. persist ASSIGNING with term+1 (old owner into history);
3. ``Remove(old term)`` on every history node that is still alive, then
   ``Assign(new term)`` on the target. A node whose session is gone counts as
   removed, also while a call to it is in flight: a frozen node never answers,
   and the round must not wait for it longer than its session lives;
4. persist ASSIGNED, clear history, bump the assignment version.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import structlog

from common.errors import IgnoredOperation
from common.etcd.metastore import MetaStore
from common.etcd.session import SessionInfo, follow_sessions
from common.grpcutil import StubCache
from common.tasks import BackgroundTasks
from coordinator.metrics import PCHANNEL_MOVES
from coordinator.streaming.pchannel import PChannelMeta, PChannelState
from coordinator.streaming.policy import BalancePolicy
from protos import streaming_pb2, streaming_pb2_grpc

_PREFIX = "streamingcoord/pchannel/"
STREAMING_NODE_ROLE = "streamingnode"
T = TypeVar("T")


class NodeGone(Exception):
    """The node's session disappeared while a call to it was in flight."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AssignmentView:
    """What clients need: for each live node, its address and the pchannels it serves at which term."""

    version: int
    nodes: dict[int, tuple[str, tuple[tuple[str, int], ...]]]

    def owner(self, pchannel: str) -> tuple[int, str, int] | None:
        for node_id, (address, channels) in self.nodes.items():
            for name, term in channels:
                if name == pchannel:
                    return node_id, address, term
        return None


class StreamingBalancer:
    def __init__(
        self,
        store: MetaStore,
        pchannels: list[str],
        *,
        interval_seconds: float = 1.0,
        vchannel_counts: Callable[[], dict[str, int]] | None = None,
        rebalance_cooldown_seconds: float = 10.0,
    ) -> None:
        self._store = store
        self._names = pchannels
        self._interval = interval_seconds
        self._policy = BalancePolicy(rebalance_cooldown_seconds=rebalance_cooldown_seconds)
        self._vchannel_counts = vchannel_counts
        self._channels: dict[str, PChannelMeta] = {}
        self._nodes: dict[int, SessionInfo] = {}
        self._version = 0
        self._changed = asyncio.Condition()
        self._trigger = asyncio.Event()
        self._tasks = BackgroundTasks("streaming-balancer")
        self._stubs = StubCache(streaming_pb2_grpc.StreamingNodeManagerStub)
        self._stub = self._stubs.get
        self._log = structlog.get_logger().bind(component="streaming-balancer")

    async def start(self) -> None:
        stored = {kv.key[len(_PREFIX) :]: PChannelMeta.from_json(kv.value) for kv in await self._store.scan(_PREFIX)}
        for name in self._names:
            meta = stored.get(name)
            if meta is None:
                meta = PChannelMeta(name=name)
                await self._store.put(_PREFIX + name, meta.to_json())
            self._channels[name] = meta
        first_view = asyncio.Event()
        self._tasks.start(self._watch_nodes(first_view), name="balancer-nodes")
        await first_view.wait()
        self._tasks.start(self._loop(), name="balancer-loop")

    async def stop(self) -> None:
        await self._tasks.stop()
        await self._stubs.close()

    @property
    def pchannel_names(self) -> list[str]:
        return list(self._names)

    def view(self) -> AssignmentView:
        nodes: dict[int, tuple[str, list[tuple[str, int]]]] = {
            n.server_id: (n.address, []) for n in self._nodes.values()
        }
        for c in self._channels.values():
            if c.state == PChannelState.ASSIGNED and c.node_id in nodes:
                nodes[c.node_id][1].append((c.name, c.term))
        return AssignmentView(
            version=self._version, nodes={k: (a, tuple(cs)) for k, (a, cs) in nodes.items()}
        )

    async def wait_for_version(self, after: int) -> AssignmentView:
        """Block until the assignment version is greater than ``after``."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._version > after)
            return self.view()

    def trigger(self) -> None:
        self._trigger.set()

    async def report_error(self, pchannel: str, term: int) -> None:
        meta = self._channels.get(pchannel)
        if meta is None:
            return
        updated = meta.mark_unavailable(term)
        if updated is not meta:
            await self._persist(updated)
            self._log.info("pchannel marked unavailable", pchannel=pchannel, term=term)
            self.trigger()

    async def _watch_nodes(self, first_view: asyncio.Event) -> None:
        async for nodes in follow_sessions(self._store, STREAMING_NODE_ROLE):
            if set(nodes) != set(self._nodes):
                self._log.info("streaming nodes changed", nodes=sorted(nodes))
            self._nodes = nodes
            await self._bump()
            self.trigger()
            first_view.set()

    async def _loop(self) -> None:
        backoff = 0.01
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval):
                    await self._trigger.wait()
            self._trigger.clear()
            try:
                await self._balance()
                backoff = 0.01
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary: log and retry with backoff
                self._log.warning("balance round failed", error=str(err))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                self.trigger()

    async def _balance(self) -> None:
        live = set(self._nodes)
        counts = self._vchannel_counts() if self._vchannel_counts else None
        moves = self._policy.plan(list(self._channels.values()), live, counts, time.monotonic())
        if not moves:
            return
        PCHANNEL_MOVES.inc(len(moves))
        # Phase 1: persist the new terms before any node hears of them.
        staged = {}
        for name, node in moves.items():
            meta = self._channels[name].assign_to(node)
            await self._persist(meta)
            staged[name] = meta
        # Every channel's step runs to its end, whatever happens to the others; then the first error.
        results = await asyncio.gather(*(self._apply(meta) for meta in staged.values()), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r

    async def _apply(self, meta: PChannelMeta) -> None:
        for h in meta.history:
            node = self._nodes.get(h.node_id)
            if node is None:
                continue  # session gone: counts as removed
            try:
                await self._unless_gone(
                    h.node_id,
                    self._stub(node.address).Remove(
                        streaming_pb2.RemoveRequest(pchannel=meta.name, term=h.term), timeout=60
                    ),
                )
            except NodeGone:
                self._log.info("old owner gone during remove", pchannel=meta.name, term=h.term, node=h.node_id)
            except IgnoredOperation:
                pass  # removed already
        target = self._nodes.get(meta.node_id)
        if target is None:
            raise RuntimeError(f"node {meta.node_id} left while assigning {meta.name}")
        await self._unless_gone(
            meta.node_id,
            self._stub(target.address).Assign(
                streaming_pb2.AssignRequest(pchannel=meta.name, term=meta.term), timeout=60
            ),
        )
        await self._persist(meta.assign_done())
        self._log.info("pchannel assigned", pchannel=meta.name, term=meta.term, node=meta.node_id)

    async def _unless_gone(self, node_id: int, call: Awaitable[T]) -> T:
        """Await ``call``; raise ``NodeGone`` (and cancel it) if ``node_id``'s session disappears first."""

        async def gone() -> None:
            async with self._changed:
                await self._changed.wait_for(lambda: node_id not in self._nodes)

        work = asyncio.ensure_future(call)
        watch = asyncio.ensure_future(gone())
        try:
            await asyncio.wait([work, watch], return_when=asyncio.FIRST_COMPLETED)
            if work.done():
                return work.result()
            raise NodeGone(f"streaming node {node_id} left")
        finally:
            for fut in (work, watch):
                fut.cancel()
            await asyncio.wait([work, watch])
            for fut in (work, watch):
                if not fut.cancelled():
                    fut.exception()  # retrieved: what mattered was returned or raised above

    async def _persist(self, meta: PChannelMeta) -> None:
        await self._store.put(_PREFIX + meta.name, meta.to_json())
        self._channels[meta.name] = meta
        await self._bump()

    async def _bump(self) -> None:
        async with self._changed:
            self._version += 1
            self._changed.notify_all()

