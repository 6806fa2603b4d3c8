"""Append messages to a pchannel's WAL, following its owner.

The producer resolves a pchannel's owner and term (``AssignmentSource``) and appends through a
``ChannelAppender`` opened by its ``StreamingNodes`` (``nodes.py``: gRPC, or in-process for the
streaming node of this process). A "not appended" answer (wrong term, channel not here, WAL
closing) makes the producer report the error, wait for a newer term and retry, the same for
either; a broken connection fails the call instead: the append may or may not have happened,
and retrying could duplicate it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import structlog

from common.errors import ErrorCode, StrataError
from common.message import Outgoing, TypedMessage
from common.tracing import stamp_messages
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.nodes import AppendResult, ChannelAppender, StreamingNodes
from streamingnode.client.remote import RemoteStreamingNodes

_RETRYABLE = {
    ErrorCode.UNMATCHED_CHANNEL_TERM,
    ErrorCode.CHANNEL_NOT_EXIST,
    ErrorCode.CHANNEL_FENCED,
    ErrorCode.WAL_CLOSED,
}


def _outgoing(messages: Sequence[TypedMessage]) -> list[Outgoing]:
    out = [Outgoing.of(m) for m in messages]
    stamp_messages([o.msg for o in out])  # the streaming node's span joins the caller's trace (common/tracing)
    return out


class Producer:
    """Appends to any pchannel, following ownership changes."""

    def __init__(self, source: AssignmentSource, nodes: StreamingNodes | None = None) -> None:
        """``nodes``: how this process reaches the owners (default: gRPC; ``launch/`` wires the
        in-process ``LocalStreamingNode`` where a streaming node runs in the process)."""
        self._source = source
        self._nodes: StreamingNodes = nodes or RemoteStreamingNodes()
        self._appenders: dict[str, ChannelAppender] = {}
        self._lock = asyncio.Lock()
        self._log = structlog.get_logger().bind(component="producer")

    async def _appender(self, pchannel: str, newer_than_term: int, timeout: float) -> ChannelAppender:
        """The appender to ``pchannel``'s current owner and term."""
        async with self._lock:
            address, term = await self._source.resolve(pchannel, newer_than_term=newer_than_term, timeout=timeout)
            # An appender is reused only while it serves the current term: a cached stream to an
            # owner the pchannel has already moved away from would only be abandoned mid-append.
            a = self._appenders.get(pchannel)
            if a is not None and a.term == term and a.address == address and a.usable():
                return a
            if a is not None:
                await a.close()
            a = self._appenders[pchannel] = self._nodes.open(pchannel, address, term, self._source)
            return a

    async def append(
        self, pchannel: str, messages: Sequence[TypedMessage], *, timeout: float = 30.0, txn: bool = False
    ) -> list[AppendResult]:
        """Append ``messages`` in order; returns once they are persisted.

        Each is encoded once here; the streaming node of this process takes the typed messages
        as they are (never decoded), another gets the envelopes. With ``txn`` the messages are
        one transaction: they share one timetick and readers see all of them or none.
        """
        outgoing = _outgoing(messages)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        stale_term = 0
        while True:
            remaining = max(deadline - loop.time(), 0.1)
            appender = await self._appender(pchannel, stale_term, remaining)
            try:
                return await appender.append(outgoing, timeout=remaining, txn=txn)
            except StrataError as err:  # the same errors either way (streamingnode/service/append.py)
                if err.code not in _RETRYABLE or loop.time() >= deadline:
                    raise
                reason = err.message
            self._log.info("append rejected, re-resolving", pchannel=pchannel, term=appender.term, reason=reason)
            await self._source.report_error(pchannel, appender.term, reason)
            stale_term = appender.term
            if appender.takes_messages:
                # The owner that refused may still hold the envelopes; a Produce request only carried their encoding.
                outgoing = _outgoing(messages)
            await asyncio.sleep(0.05)

    async def close(self) -> None:
        for a in list(self._appenders.values()):
            await a.close()
        self._appenders.clear()
        await self._nodes.close()


__all__ = ["AppendResult", "Producer"]
