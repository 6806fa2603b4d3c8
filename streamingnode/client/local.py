"""``LocalStreamingNode``: the streaming node of this process, appended to without gRPC.

``strata standalone`` runs the streaming node, the query node and the proxy in
one process (``launch/standalone_node.py``), as Milvus standalone runs every
component in one. Its ``StreamingNodes`` appends to the pchannels this node owns by
calling their WAL directly: the same term check and the same errors as the ``Produce``
handler gives (both call ``streamingnode/service/append.py``), without encoding the
request, two loopback hops and decoding it again. Pchannels owned by any other node
still go through ``Produce`` (``others``, by default ``RemoteStreamingNodes``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from common.errors import ErrorCode, StrataError
from common.message import Outgoing
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.nodes import AppendResult, ChannelAppender, StreamingNodes
from streamingnode.client.remote import RemoteStreamingNodes
from streamingnode.service.append import WALSource, append


class LocalStreamingNode:
    """``StreamingNodes`` of a process with a streaming node: its own pchannels in-process, others by ``others``."""

    def __init__(self, address: str, wals: WALSource, others: StreamingNodes | None = None) -> None:
        """``address``: the one this node registered in its session, which the assignment names."""
        self.address = address
        self._wals = wals
        self._others: StreamingNodes = others or RemoteStreamingNodes()
        self.appends = 0  # appends served (whatever their outcome): how a test sees the path is taken

    def open(self, pchannel: str, address: str, term: int, moves: AssignmentSource) -> ChannelAppender:
        if address != self.address:
            return self._others.open(pchannel, address, term, moves)
        return _LocalAppender(self, pchannel, term)

    async def append(self, pchannel: str, term: int, messages: Sequence[Outgoing], *,
                     txn: bool = False) -> list[AppendResult]:
        """Append to ``pchannel``'s WAL at ``term``; the WAL takes ``messages`` over, typed as they are.

        Raises what ``Produce`` answers with (``streamingnode.service.append``): ``ChannelNotExist``,
        ``UnmatchedChannelTerm``, ``WALClosed`` (the producer re-resolves and retries), the WAL's
        own error, or an UNEXPECTED "append failed: ...".
        """
        self.appends += 1
        done = await append(self._wals, pchannel, term, messages, txn=txn)
        return [AppendResult(a.message_id.to_bytes(), a.timetick, a.sealed_segment_ids) for a in done]

    async def close(self) -> None:
        await self._others.close()


class _LocalAppender:
    takes_messages = True  # the WAL takes the objects over: a retry sends fresh ones

    def __init__(self, node: LocalStreamingNode, pchannel: str, term: int) -> None:
        self._node, self.pchannel, self.term = node, pchannel, term
        self.address = node.address

    def usable(self) -> bool:
        return True

    async def append(self, messages: Sequence[Outgoing], *, timeout: float, txn: bool) -> list[AppendResult]:
        try:
            async with asyncio.timeout(timeout):
                return await self._node.append(self.pchannel, self.term, messages, txn=txn)
        except TimeoutError:
            raise StrataError(f"append to {self.pchannel} timed out", ErrorCode.TIMEOUT) from None

    async def close(self) -> None:
        """Nothing to release: the WAL belongs to the streaming node."""


__all__ = ["LocalStreamingNode", "WALSource"]
