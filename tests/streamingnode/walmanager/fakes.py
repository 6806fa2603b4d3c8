"""Fakes for the WAL lifetime tests: a WAL factory that can be slow, gated or failing,
and that records every open and close so tests can check that steps never overlap."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from streamingnode.wal.wal import WAL
from streamingnode.walmanager.lifetime import WALLifetime


class FakeWAL:
    """Stands in for ``WAL``: the lifetime only reads ``channel``/``term`` and calls ``close()``."""

    def __init__(self, factory: FakeFactory, channel: str, term: int) -> None:
        self._factory = factory
        self.channel = channel
        self.term = term
        self.closed = False

    async def close(self) -> None:
        await self._factory.run_step(("close", self.channel, self.term), self._factory.close_delay())
        self.closed = True
        self._factory.open_wals[self.channel].remove(self)


@dataclass
class FakeFactory:
    """``await factory(pchannel, term)`` returns a ``FakeWAL``.

    * ``fail``: term -> exception raised by the open of that term;
    * ``gate``: when set, every open waits for it (``entered`` is set first);
    * ``delay``: seconds an open or close takes (a callable for random delays).
    """

    fail: dict[int, Exception] = field(default_factory=dict)
    gate: asyncio.Event | None = None
    delay: Callable[[], float] = lambda: 0.0
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    events: list[tuple[str, str, int]] = field(default_factory=list)
    open_wals: dict[str, list[FakeWAL]] = field(default_factory=dict)
    active: int = 0
    overlaps: int = 0
    max_open: int = 0

    def close_delay(self) -> float:
        return self.delay()

    async def run_step(self, event: tuple[str, str, int], seconds: float) -> None:
        """One open or close; counts an overlap if another one is running."""
        self.active += 1
        if self.active > 1:
            self.overlaps += 1
        try:
            self.events.append(event)
            if seconds:
                await asyncio.sleep(seconds)
        finally:
            self.active -= 1

    async def __call__(self, pchannel: str, term: int) -> WAL:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        await self.run_step(("open", pchannel, term), self.delay())
        err = self.fail.get(term)
        if err is not None:
            raise err
        wal = FakeWAL(self, pchannel, term)
        wals = self.open_wals.setdefault(pchannel, [])
        wals.append(wal)
        self.max_open = max(self.max_open, len(wals))
        return cast(WAL, wal)

    def opened_terms(self, pchannel: str = "p0") -> list[int]:
        return [t for kind, ch, t in self.events if kind == "open" and ch == pchannel]


def random_delay(rng: random.Random, most: float) -> Callable[[], float]:
    return lambda: rng.uniform(0, most)


async def wait_state(lt: WALLifetime, term: int, available: bool, timeout: float = 2.0) -> None:
    """Wait until ``lt``'s current state is at ``(term, available)`` (errors ignored)."""
    async with asyncio.timeout(timeout):
        while (lt.current.term, lt.current.available) != (term, available):
            await asyncio.sleep(0.001)
