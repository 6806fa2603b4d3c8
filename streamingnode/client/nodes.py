"""How a producer reaches a pchannel's owner: ``StreamingNodes`` opens a ``ChannelAppender``.

Two implementations, chosen once where the process is wired (``launch/``):

* ``client/remote.py`` ``RemoteStreamingNodes``: the owner's ``Produce`` stream over gRPC (every
  process of a cluster, the coordinator's DDL messages);
* ``client/local.py`` ``LocalStreamingNode``: the WALs of the streaming node of this process
  (standalone, a colocated node) without gRPC; pchannels other nodes own go to its remote one.

Both answer with the same errors (``streamingnode/service/append.py``), so the producer's retry
on a refused append (wrong term, channel gone, WAL closing) is one loop for either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from common.message import Outgoing
from streamingnode.client.assignment import AssignmentSource


@dataclass(frozen=True, slots=True)
class AppendResult:
    message_id: bytes
    timetick: int
    sealed_segment_ids: tuple[int, ...] = ()  # a ManualFlush's: the growing segments it sealed


class ChannelAppender(Protocol):
    """Appends to one pchannel at the owner (``address``) and ``term`` it was opened for."""

    address: str
    term: int
    # The owner keeps the message objects it was given (the in-process WAL takes them over):
    # a retry must send fresh ones.
    takes_messages: bool

    def usable(self) -> bool:
        """False once broken (a gRPC stream that died): the producer opens another."""
        ...

    async def append(
        self, messages: Sequence[Outgoing], *, timeout: float, txn: bool
    ) -> list[AppendResult]:
        """Append ``messages`` in order; returns once they are persisted. The owner in this
        process takes the typed forms as they are; a remote one gets the envelopes.

        Raises the owner's refusal as its ``StrataError`` (the producer retries
        UNMATCHED_CHANNEL_TERM, CHANNEL_NOT_EXIST, CHANNEL_FENCED, WAL_CLOSED), TIMEOUT after
        ``timeout`` seconds, or UNAVAILABLE when the owner cannot be reached (the append may or
        may not have happened: not retried).
        """
        ...

    async def close(self) -> None: ...


class StreamingNodes(Protocol):
    """Opens appenders to pchannel owners."""

    def open(self, pchannel: str, address: str, term: int, moves: AssignmentSource) -> ChannelAppender:
        """An appender to ``pchannel`` at ``address`` and ``term``; ``moves`` tells it when the
        pchannel moves to a newer term while an append waits (an owner that froze)."""
        ...

    async def close(self) -> None:
        """Close what the appenders share (nothing the producer has not closed already)."""
        ...
