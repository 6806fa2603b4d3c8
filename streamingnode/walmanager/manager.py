"""Opens and closes WALs as the coordinator assigns and removes pchannels.

Walking-skeleton version: one lock per pchannel serialises open/remove, stale
terms are refused with ``IgnoredOperation``. The full expected/current
``(term, available)`` state machine of ARCHITECTURE §4.3 is issue #3.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass

import structlog

from services.errors import ChannelNotExist, IgnoredOperation, UnmatchedChannelTerm
from streamingnode.wal.timestamps import TimestampSource
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import WALOpener


@dataclass(frozen=True, slots=True)
class WALState:
    pchannel: str
    term: int
    available: bool
    error: str = ""


class WALManager:
    def __init__(self, opener: WALOpener, timestamps: TimestampSource, *, tick_interval: float = 0.2) -> None:
        self._opener = opener
        self._ts = timestamps
        self._tick_interval = tick_interval
        self._wals: dict[str, WAL] = {}
        self._states: dict[str, WALState] = {}
        self._locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._log = structlog.get_logger().bind(component="wal-manager")

    async def open(self, pchannel: str, term: int) -> None:
        """Open ``pchannel`` at ``term``, closing an older term first."""
        async with self._locks[pchannel]:
            state = self._states.get(pchannel)
            if state is not None and (state.term > term or (state.term == term and state.available)):
                if state.term == term:
                    return
                raise IgnoredOperation(f"open {pchannel} at term {term}: already at term {state.term}")
            await self._close_locked(pchannel)
            try:
                impl = await self._opener.open(pchannel, term)
                wal = WAL(impl, self._ts, tick_interval=self._tick_interval)
                try:
                    await wal.start()
                except BaseException:
                    await impl.close()
                    raise
            except Exception as err:
                self._states[pchannel] = WALState(pchannel, term, False, str(err))
                self._log.warning("wal open failed", pchannel=pchannel, term=term, error=str(err))
                raise
            self._wals[pchannel] = wal
            self._states[pchannel] = WALState(pchannel, term, True)

    async def remove(self, pchannel: str, term: int) -> None:
        async with self._locks[pchannel]:
            state = self._states.get(pchannel)
            if state is not None and state.term > term:
                raise IgnoredOperation(f"remove {pchannel} at term {term}: already at term {state.term}")
            await self._close_locked(pchannel)
            self._states[pchannel] = WALState(pchannel, term, False)

    async def _close_locked(self, pchannel: str) -> None:
        wal = self._wals.pop(pchannel, None)
        if wal is not None:
            await wal.close()

    def get(self, pchannel: str, term: int) -> WAL:
        """The available WAL of ``pchannel`` at exactly ``term``."""
        wal = self._wals.get(pchannel)
        if wal is None:
            raise ChannelNotExist(f"pchannel {pchannel} is not open on this node")
        if wal.term != term:
            raise UnmatchedChannelTerm(f"pchannel {pchannel} is at term {wal.term}, request has term {term}")
        return wal

    def states(self) -> list[WALState]:
        return list(self._states.values())

    async def close(self) -> None:
        for pchannel in list(self._wals):
            async with self._locks[pchannel]:
                await self._close_locked(pchannel)
