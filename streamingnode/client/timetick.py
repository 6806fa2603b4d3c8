"""Ask a pchannel's owner for a TimeTick at or above a timestamp (``RequestTimeTick``), coalesced.

A delegator that must answer a Strong read at a fresh timestamp ``T`` asks
rather than waiting up to the tick interval: the owner publishes a TimeTick
``>= T`` to the pchannel's readers at once (``streamingnode/wal/wal.py``
``request_tick``), and the delegator's consumer applies it after every message
below it.

Coalescing, on top of the WAL's own: at most one request per pchannel is in
flight from this process. Callers arriving meanwhile wait for it; those it does
not cover (their timestamp is above the one it carries) are covered by the next
round, which carries the highest of their timestamps. So ``n`` concurrent reads
of every delegator of this node on one pchannel cost one or two calls.

An answer is only a hint that the tick is on its way: the read still waits for
its delegator's tsafe, so a failed or lost request costs only the time until the
next regular TimeTick.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from common.grpcutil import StubCache
from protos import streaming_pb2, streaming_pb2_grpc
from streamingnode.client.assignment import AssignmentSource

#: ``send(pchannel, timestamp, timeout) -> timetick``: one request to the pchannel's owner.
Send = Callable[[str, int, float], Awaitable[int]]


class _Abandoned(Exception):
    """The caller leading a round left before its answer: a waiting caller leads the next one."""


@dataclass(slots=True)
class _Round:
    timestamp: int
    answer: asyncio.Future[int]


@dataclass(slots=True)
class _Channel:
    covered: int = 0  # the highest TimeTick an answer named
    current: _Round | None = None
    wanted: int = 0  # the highest timestamp of a caller the current round does not cover
    rounds: int = 0


def _retrieve(fut: asyncio.Future[int]) -> None:
    """Mark a round's failure as seen even when nobody waited for it (no "never retrieved" warning)."""
    if not fut.cancelled():
        fut.exception()


class TimeTickRequester:
    """On-demand TimeTicks for this process's delegators; one request in flight per pchannel.

    ``send`` defaults to the ``RequestTimeTick`` call to the owner named by ``source``.
    ``close()`` closes the channels it opened.
    """

    def __init__(self, source: AssignmentSource, *, send: Send | None = None) -> None:
        self._source = source
        self._send = send or self._call
        self._channels: dict[str, _Channel] = {}
        self._stubs = StubCache(streaming_pb2_grpc.StreamingNodeHandlerStub)

    def rounds(self, pchannel: str) -> int:
        """How many requests for ``pchannel`` this requester has sent."""
        ch = self._channels.get(pchannel)
        return 0 if ch is None else ch.rounds

    async def request(self, pchannel: str, timestamp: int, *, timeout: float) -> int:
        """Return once the owner of ``pchannel`` has published a TimeTick >= ``timestamp``; returns it.

        Raises what the request raised (``StrataError``, ``grpc.aio.AioRpcError``, ``TimeoutError``)
        for every caller waiting for that request. ``timeout`` bounds the one request this caller
        sends, if it sends one; cancel the call to give up waiting.
        """
        ch = self._channels.setdefault(pchannel, _Channel())
        while ch.covered < timestamp:
            current = ch.current
            if current is None:
                await self._lead(pchannel, ch, max(timestamp, ch.wanted), timeout)
                continue
            if current.timestamp < timestamp:
                ch.wanted = max(ch.wanted, timestamp)  # for the next round
            try:
                await asyncio.shield(current.answer)
            except _Abandoned:
                continue
        return ch.covered

    async def _lead(self, pchannel: str, ch: _Channel, timestamp: int, timeout: float) -> None:
        answer: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        answer.add_done_callback(_retrieve)
        ch.current, ch.wanted = _Round(timestamp, answer), 0
        ch.rounds += 1
        try:
            tick = await self._send(pchannel, timestamp, timeout)
        except asyncio.CancelledError:
            answer.set_exception(_Abandoned())
            raise
        except BaseException as err:
            answer.set_exception(err)
            raise
        finally:
            ch.current = None
        ch.covered = max(ch.covered, tick)
        answer.set_result(tick)

    async def _call(self, pchannel: str, timestamp: int, timeout: float) -> int:
        async with asyncio.timeout(timeout):
            address, term = await self._source.resolve(pchannel, timeout=timeout)
            stub = self._stubs.get(address)
            resp = await stub.RequestTimeTick(
                streaming_pb2.RequestTimeTickRequest(pchannel=pchannel, term=term, timestamp=timestamp),
                timeout=timeout,
            )
        return int(resp.timetick)

    async def close(self) -> None:
        await self._stubs.close()
