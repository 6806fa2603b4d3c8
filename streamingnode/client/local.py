"""The streaming node of this process, appended to without gRPC.

``strata standalone`` runs the streaming node, the query node and the proxy in
one process (``launch/standalone_node.py``), as Milvus standalone runs every
component in one. The proxy's ``Producer`` then appends to the pchannels this
node owns by calling their WAL directly: the same term check and the same
errors as the ``Produce`` handler gives (both call ``streamingnode/service/append.py``),
without encoding the request, two loopback hops and decoding it again.
Pchannels owned by any other node still go through ``Produce``.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.common_pb2 import Message
from streamingnode.service.append import WALSource, append
from streamingnode.wal.wal import Appended


class LocalStreamingNode:
    def __init__(self, address: str, wals: WALSource) -> None:
        """``address``: the one this node registered in its session, which the assignment names."""
        self.address = address
        self._wals = wals
        self.appends = 0  # appends served (whatever their outcome): how a test sees the path is taken

    async def append(
        self, pchannel: str, term: int, messages: Sequence[Message], *, txn: bool = False
    ) -> list[Appended]:
        """Append to ``pchannel``'s WAL at ``term``; the WAL takes ``messages`` over.

        Raises what ``Produce`` answers with (``streamingnode.service.append``): ``ChannelNotExist``,
        ``UnmatchedChannelTerm``, ``WALClosed`` (the producer re-resolves and retries), the WAL's
        own error, or an UNEXPECTED "append failed: ...".
        """
        self.appends += 1
        return await append(self._wals, pchannel, term, messages, txn=txn)


__all__ = ["LocalStreamingNode", "WALSource"]
