"""``WALManager``: one ``WALLifetime`` per pchannel, driven by the coordinator's Assign/Remove.

The manager only routes: each pchannel's lifetime (``lifetime.py``) holds the
expected/current state machine and its worker. Lifetimes are created on the
first request for a pchannel and live until :meth:`WALManager.close`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from common.errors import ChannelNotExist, WALClosed
from streamingnode.shard import SealPolicy, ShardManager
from streamingnode.wal.holds import DEFAULT_MAX_AGE_SECONDS
from streamingnode.wal.ids import IDSource
from streamingnode.wal.recovery import RecoveryStore
from streamingnode.wal.shard_interceptor import ShardInterceptor
from streamingnode.wal.timestamps import TimestampSource
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import WALOpener
from streamingnode.walmanager.lifetime import WALFactory, WALHook, WALLifetime


@dataclass(frozen=True, slots=True, kw_only=True)
class WALStatus:
    """The current state of one pchannel, as ``CollectStatus`` reports it."""

    pchannel: str
    term: int
    available: bool
    error: str | None = None


class WALManager:
    """Opens and closes the WALs of this node as the coordinator assigns and removes pchannels.

    ``wal_factory`` replaces the default "open the backend, start a ``WAL``"
    (tests pass fakes). ``on_open`` / ``on_close`` are called with a WAL right
    after it opened / right before it closes (the flusher registers there).
    """

    def __init__(
        self,
        opener: WALOpener,
        timestamps: TimestampSource,
        *,
        tick_interval: float = 0.2,
        wal_factory: WALFactory | None = None,
        on_open: WALHook | None = None,
        on_close: WALHook | None = None,
        segment_ids: IDSource | None = None,
        seal_policy: SealPolicy | None = None,
        recovery: RecoveryStore | None = None,
        snapshot_interval: float = 10.0,
        read_hold_seconds: float = DEFAULT_MAX_AGE_SECONDS,
    ) -> None:
        self._opener = opener
        self._read_hold_seconds = read_hold_seconds
        # With a recovery store every WAL saves snapshots and reopens from the newest one.
        self._recovery = recovery
        self._snapshot_interval = snapshot_interval
        # With an id source every WAL assigns inserts to growing segments (the shard interceptor).
        self._segment_ids = segment_ids
        self._seal_policy = seal_policy
        self._ts = timestamps
        self._tick_interval = tick_interval
        self._factory: WALFactory = wal_factory if wal_factory is not None else self._open_wal
        self._on_open = on_open
        self._on_close = on_close
        self._lifetimes: dict[str, WALLifetime] = {}
        self._closing = False
        self._log = structlog.get_logger().bind(component="wal-manager")

    async def _open_wal(self, pchannel: str, term: int) -> WAL:
        impl = await self._opener.open(pchannel, term)
        interceptors = (
            [ShardInterceptor(ShardManager(self._seal_policy), self._segment_ids)]
            if self._segment_ids is not None
            else []
        )
        wal = WAL(
            impl,
            self._ts,
            tick_interval=self._tick_interval,
            interceptors=interceptors,
            recovery=None if self._recovery is None else self._recovery.handle(pchannel),
            snapshot_interval=self._snapshot_interval,
            read_hold_seconds=self._read_hold_seconds,
        )
        try:
            await wal.start()
        except BaseException:
            # Give the backend ownership back, also when the worker is being cancelled.
            await impl.close()
            raise
        return wal

    def _lifetime(self, pchannel: str) -> WALLifetime:
        if self._closing:
            raise WALClosed("wal manager is closed")
        lifetime = self._lifetimes.get(pchannel)
        if lifetime is None:
            lifetime = WALLifetime(pchannel, self._factory, on_open=self._on_open, on_close=self._on_close)
            self._lifetimes[pchannel] = lifetime
        return lifetime

    async def open(self, pchannel: str, term: int) -> None:
        """Open ``pchannel`` at ``term`` (closing an older term first); see ``WALLifetime.open``."""
        await self._lifetime(pchannel).open(term)

    async def remove(self, pchannel: str, term: int) -> None:
        """Close ``pchannel`` up to ``term``; see ``WALLifetime.remove``."""
        await self._lifetime(pchannel).remove(term)

    def get(self, pchannel: str, term: int) -> WAL:
        """The available WAL of ``pchannel`` at exactly ``term``; never blocks.

        Raises ``ChannelNotExist`` or ``UnmatchedChannelTerm``.
        """
        lifetime = self._lifetimes.get(pchannel)
        if lifetime is None:
            raise ChannelNotExist(f"pchannel {pchannel} is not open on this node")
        return lifetime.available_wal(term)

    def states(self) -> list[WALStatus]:
        """The current state of every pchannel this node has been asked about."""
        out = []
        for name, lifetime in self._lifetimes.items():
            s = lifetime.current
            if s.term >= 0:
                out.append(WALStatus(pchannel=name, term=s.term, available=s.available, error=s.error))
        return out

    async def release_all(self) -> None:
        """Close every open WAL (as ``remove`` at its current term) and stay usable.

        What a node does when its session is lost: the coordinator hands these
        pchannels to other nodes, so this node must stop serving them.
        """
        terms = {name: lt.current.term for name, lt in self._lifetimes.items() if lt.current.term >= 0}
        async with asyncio.TaskGroup() as tg:
            for name, term in terms.items():
                tg.create_task(self.remove(name, term))
        self._log.warning("every pchannel released", pchannels=sorted(terms))

    async def close(self) -> None:
        """Fail new requests with ``WALClosed``, then close every lifetime (and its WAL)."""
        self._closing = True
        lifetimes = list(self._lifetimes.values())
        async with asyncio.TaskGroup() as tg:
            for lifetime in lifetimes:
                tg.create_task(lifetime.close())
        self._log.info("wal manager closed", pchannels=len(lifetimes))
