"""The WAL writer's interceptor chain, and the observers of what it persisted.

An *interceptor* sees every append between the queue and its timestamps: it may add messages of
its own before the caller's (``pre``: each gets a timetick of its own), restamp the caller's
headers (``own``), and hold reservations until the writer says whether the batch was persisted
(``committed``) or may not have been (``aborted``), or a later link refused the append
(``refused``). When the WAL is idle it may owe messages of its own
(``tick``). On open it rebuilds its state from the log (``replayed``). The shard interceptor
(``shard_interceptor.py``, segment assignment) is one.

``Chain`` runs the writer's interceptors in order. Each message comes with its typed form
(``common.message.Outgoing``: built by a producer of this process, or decoded once where it
entered the WAL, ``WAL.append``, where a message Strata cannot read refuses that append with
``MalformedMessage``); the links and the observers read that typed form, so no one on the write
path decodes again: with upb every read of ``msg.body`` copies it (512 KiB for a 1,000-row
Insert of 128-dim floats).

An *observer* (``Observer``; the row counts of ``stats.py``) is fed every message the WAL
persisted or replayed, typed, in log order; it makes no decision about an append.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from common.message import Outgoing, TypedMessage

__all__ = ["Chain", "ChainExpansion", "Expansion", "Interceptor", "Observer", "Outgoing"]


@dataclass(slots=True)
class Expansion:
    """What an interceptor made of an append (or, from ``tick``, of nothing); links extend it."""

    pre: list[Outgoing] = field(default_factory=list)  # self-generated, each its own timetick, before ``own``
    own: list[Outgoing] = field(default_factory=list)  # the caller's messages, headers restamped


E = TypeVar("E", bound=Expansion)


class Interceptor(Protocol[E]):
    """One link of the chain; called only by the WAL's writer task, in log order."""

    async def expand(self, messages: Sequence[Outgoing], now_ms: int) -> E:
        """What ``messages`` (one append, as the previous link left it) turn into.

        Raises a ``StrataError`` to refuse the append (that caller alone hears it); having raised,
        the link holds nothing for it.
        """
        ...

    def committed(self, ex: E, now_ms: int) -> None:
        """``ex``'s messages are persisted: keep what was reserved for them."""
        ...

    def aborted(self, ex: E) -> None:
        """Persisting ``ex``'s messages failed, so they may or may not be in the log: release what
        was reserved for them."""
        ...

    def refused(self, ex: E) -> None:
        """A later link refused the append: nothing of ``ex`` is written; undo all of it."""
        ...

    def tick(self, now_ms: int) -> E:
        """The messages owed now (in ``pre``) by a WAL with nothing to write."""
        ...

    def replayed(self, msg: TypedMessage, timetick_ms: int) -> None:
        """Fold ``msg``, read back from the log on open, into the link's state."""
        ...


class Observer(Protocol):
    def observe(self, msg: TypedMessage) -> None:
        """Fold one persisted or replayed message (log order) into what this observer keeps."""
        ...


@dataclass(slots=True)
class ChainExpansion(Expansion):
    """The chain's expansion: every link's ``pre`` in link order, the last link's ``own``."""

    steps: list[tuple[Interceptor[Any], Expansion]] = field(default_factory=list)


class Chain:
    """The writer's interceptors, run in order; an empty chain passes an append on as it is."""

    def __init__(self, links: Sequence[Interceptor[Any]] = ()) -> None:
        self.links: tuple[Interceptor[Any], ...] = tuple(links)

    async def expand(self, messages: Sequence[Outgoing], now_ms: int) -> ChainExpansion:
        """Run each link on ``messages`` (one append, decoded where it entered the WAL), each on
        what the previous one left. If a link refuses, the links before it hear ``refused`` (last first) and
        the error is raised."""
        ex = ChainExpansion(own=list(messages))
        try:
            for link in self.links:
                step = await link.expand(ex.own, now_ms)
                ex.steps.append((link, step))
                ex.pre.extend(step.pre)
                ex.own = step.own
        except BaseException:
            for link, step in reversed(ex.steps):
                link.refused(step)
            raise
        return ex

    def tick(self, now_ms: int) -> ChainExpansion:
        ex = ChainExpansion()
        for link in self.links:
            step = link.tick(now_ms)
            ex.steps.append((link, step))
            ex.pre.extend(step.pre)
        return ex

    def committed(self, ex: ChainExpansion, now_ms: int) -> None:
        for link, step in ex.steps:
            link.committed(step, now_ms)

    def aborted(self, ex: ChainExpansion) -> None:
        """Last link first: a link releases after the links that built on what it made."""
        for link, step in reversed(ex.steps):
            link.aborted(step)

    def replayed(self, msg: TypedMessage, timetick_ms: int) -> None:
        for link in self.links:
            link.replayed(msg, timetick_ms)
