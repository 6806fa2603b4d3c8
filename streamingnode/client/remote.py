"""``RemoteStreamingNodes``: appends through the owner's ``Produce`` stream (gRPC).

One long-lived stream per pchannel and term (``produce_stream.py``), requests and answers
matched by id. A broken connection fails the append with UNAVAILABLE instead of retrying: the
append may or may not have happened, and retrying could duplicate it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc

from common.errors import ErrorCode, StrataError
from common.message import Outgoing
from common.rpcstatus import raise_for_status
from protos import common_pb2, streaming_pb2
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.nodes import AppendResult
from streamingnode.client.produce_stream import ProduceStream

# An append unanswered this long starts watching for a move of its pchannel (see
# ``_send_unless_moved``); an owner is declared lost only after seconds, so nothing waits longer.
WATCH_MOVES_AFTER_SECONDS = 0.5


class RemoteAppender:
    """A ``ChannelAppender`` over one ``Produce`` stream."""

    takes_messages = False  # a request carries the messages' encoding

    def __init__(self, pchannel: str, address: str, term: int, moves: AssignmentSource) -> None:
        self.pchannel, self.address, self.term = pchannel, address, term
        self._moves = moves
        self._stream = ProduceStream(pchannel, address, term)
        self._closed = False

    def usable(self) -> bool:
        return self._stream.broken is None

    async def append(
        self, messages: Sequence[Outgoing], *, timeout: float, txn: bool
    ) -> list[AppendResult]:
        try:
            resp = await self._send_unless_moved([o.msg for o in messages], timeout, txn)
        except (ConnectionError, grpc.aio.AioRpcError) as err:
            await self.close()
            raise StrataError(
                f"streaming node of {self.pchannel} unreachable; the write may not have been applied: {err}",
                ErrorCode.UNAVAILABLE,
            ) from err
        except TimeoutError:
            raise StrataError(f"append to {self.pchannel} timed out", ErrorCode.TIMEOUT) from None
        raise_for_status(resp.status)
        return [AppendResult(r.message_id, r.timetick, tuple(r.sealed_segment_ids)) for r in resp.results]

    async def _send_unless_moved(
        self, messages: Sequence[common_pb2.Message], timeout: float, txn: bool
    ) -> streaming_pb2.ProduceResponse:
        """The answer to ``messages``, abandoned if the pchannel moves to a newer term.

        An owner that froze (SIGSTOP, a pause, cut off from etcd) keeps its TCP
        connection and never answers; the coordinator moves its pchannels once
        its session is lost, and waiting any longer would only hit the timeout.
        The move is watched only once the answer is ``WATCH_MOVES_AFTER_SECONDS``
        late: almost every append is answered before that, and a watch costs
        every append two tasks. A move that happened before the watch starts
        is seen at once (``resolve`` returns the newer term it already knows).
        Raises ``TimeoutError`` after ``timeout`` seconds.
        """
        send = self._stream.submit(messages, txn=txn)
        moved: asyncio.Future[tuple[str, int]] | None = None
        try:
            async with asyncio.timeout(timeout):
                await asyncio.wait([send], timeout=WATCH_MOVES_AFTER_SECONDS)
                if not send.done():
                    moved = asyncio.ensure_future(
                        self._moves.resolve(self.pchannel, newer_than_term=self.term, timeout=timeout)
                    )
                    either: list[asyncio.Future[Any]] = [send, moved]
                    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                    if not send.done() and moved.exception() is None:
                        raise ConnectionError(f"{self.pchannel} moved to term {moved.result()[1]} during the append")
                return await send
        finally:
            if not send.done():
                send.cancel()  # its waiter is skipped when the answer comes
            if moved is not None:
                moved.cancel()
                await asyncio.wait([moved])
                if not moved.cancelled():
                    moved.exception()  # retrieved: the one that mattered was raised above

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._stream.close()


class RemoteStreamingNodes:
    """``StreamingNodes`` over gRPC: every owner is reached through its ``Produce`` stream."""

    def open(self, pchannel: str, address: str, term: int, moves: AssignmentSource) -> RemoteAppender:
        return RemoteAppender(pchannel, address, term, moves)

    async def close(self) -> None:
        """Nothing shared: each appender owns its stream and channel."""
