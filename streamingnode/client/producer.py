"""Append messages to a pchannel's WAL through its owner's ``Produce`` stream.

One long-lived stream per pchannel; requests and answers are matched by id.
A "not appended" answer (wrong term, channel not here, WAL closing) makes the
producer report the error, wait for a newer term and retry. A broken
connection fails the call instead: the append may or may not have happened,
and retrying could duplicate it. A pchannel owned by the streaming node of
this process (standalone, ``client/local.py``) is appended to directly, with
the same answers and the same retries.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
import structlog

from common.errors import ErrorCode, StrataError
from common.grpcutil import internal_channel
from common.message import size_bound
from common.rpcstatus import raise_for_status
from common.tasks import BackgroundTasks
from common.tracing import stamp_messages
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from streamingnode.client.assignment import AssignmentSource
from streamingnode.client.local import LocalStreamingNode

# A coalesced Produce request stops growing past this many messages or bytes.
MAX_MERGED_MESSAGES = 1024
MAX_MERGED_BYTES = 4 << 20
# An append unanswered this long starts watching for a move of its pchannel (see
# ``_send_unless_moved``); an owner is declared lost only after seconds, so nothing waits longer.
WATCH_MOVES_AFTER_SECONDS = 0.5

_RETRYABLE = {
    ErrorCode.UNMATCHED_CHANNEL_TERM,
    ErrorCode.CHANNEL_NOT_EXIST,
    ErrorCode.CHANNEL_FENCED,
    ErrorCode.WAL_CLOSED,
}


def _copy(msg: common_pb2.Message) -> common_pb2.Message:
    out = common_pb2.Message()
    out.CopyFrom(msg)
    return out


@dataclass(frozen=True, slots=True)
class AppendResult:
    message_id: bytes
    timetick: int
    sealed_segment_ids: tuple[int, ...] = ()  # a ManualFlush's: the growing segments it sealed


@dataclass(slots=True)
class _Waiter:
    messages: Sequence[common_pb2.Message]
    txn: bool
    future: asyncio.Future[streaming_pb2.ProduceResponse]


class _Stream:
    """One Produce stream. Appends queued while a request is being written are coalesced
    into the next request (a transaction always travels alone), so concurrent callers
    share gRPC messages and group commits; each caller gets its own slice of the answer.
    """

    def __init__(self, pchannel: str, address: str, term: int) -> None:
        self.pchannel, self.address, self.term = pchannel, address, term
        self._channel = internal_channel(address)
        self._call = streaming_pb2_grpc.StreamingNodeHandlerStub(self._channel).Produce()
        self._ids = itertools.count(1)
        self._pending: dict[int, list[_Waiter]] = {}
        self._outbox: list[_Waiter] = []
        self._wake = asyncio.Event()
        self.broken: BaseException | None = None
        self._tasks = BackgroundTasks("producer-stream", pchannel=pchannel, term=term)
        self._tasks.start(self._read(), name=f"produce-reader-{pchannel}")
        self._tasks.start(self._send_loop(), name=f"produce-sender-{pchannel}")

    def _fail(self, err: BaseException) -> None:
        self.broken = err
        waiters = [w for group in self._pending.values() for w in group] + self._outbox
        self._pending.clear()
        self._outbox = []
        for w in waiters:
            if not w.future.done():
                w.future.set_exception(err)

    async def _read(self) -> None:
        try:
            while True:
                resp = await self._call.read()
                if resp is grpc.aio.EOF:
                    raise ConnectionError("produce stream closed by the server")
                group = self._pending.pop(resp.request_id, [])
                offset = 0
                for w in group:
                    n = len(w.messages)
                    if not w.future.done():
                        w.future.set_result(
                            streaming_pb2.ProduceResponse(
                                request_id=resp.request_id,
                                status=resp.status,
                                results=resp.results[offset : offset + n] if resp.results else [],
                            )
                        )
                    offset += n
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the stream is dead: fail every waiter
            self._fail(err)

    def _next_group(self) -> list[_Waiter]:
        first = self._outbox.pop(0)
        if first.txn or not self._outbox:
            return [first]
        group, count, size = [first], len(first.messages), sum(map(size_bound, first.messages))
        while self._outbox and not self._outbox[0].txn and count < MAX_MERGED_MESSAGES and size < MAX_MERGED_BYTES:
            w = self._outbox.pop(0)
            group.append(w)
            count += len(w.messages)
            size += sum(map(size_bound, w.messages))
        return group

    async def _send_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._outbox:
                    group = self._next_group()
                    rid = next(self._ids)
                    self._pending[rid] = group
                    req = streaming_pb2.ProduceRequest(
                        request_id=rid,
                        pchannel=self.pchannel,
                        term=self.term,
                        messages=[m for w in group for m in w.messages],
                        txn=group[0].txn,
                    )
                    await self._call.write(req)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # writing failed: the stream is dead
            self._fail(err)

    def submit(
        self, messages: Sequence[common_pb2.Message], *, txn: bool = False
    ) -> asyncio.Future[streaming_pb2.ProduceResponse]:
        """Queue an append; the future gets its answer, or the error that broke the stream."""
        if self.broken is not None:
            raise ConnectionError(str(self.broken))
        fut: asyncio.Future[streaming_pb2.ProduceResponse] = asyncio.get_running_loop().create_future()
        self._outbox.append(_Waiter(messages, txn, fut))
        self._wake.set()
        return fut

    async def close(self) -> None:
        await self._tasks.stop()
        self._fail(ConnectionError("producer stream closed"))
        self._call.cancel()
        await self._channel.close()


class Producer:
    """Appends to any pchannel, following ownership changes."""

    def __init__(self, source: AssignmentSource, local: LocalStreamingNode | None = None) -> None:
        """``local``: the streaming node of this process, whose pchannels are appended to without gRPC."""
        self._source = source
        self._local = local
        self._streams: dict[str, _Stream] = {}
        self._lock = asyncio.Lock()
        self._log = structlog.get_logger().bind(component="producer")

    async def _stream(self, pchannel: str, newer_than_term: int, timeout: float) -> _Stream | int:
        """The Produce stream to ``pchannel``'s owner; the owner's term instead when that is ``local``."""
        async with self._lock:
            address, term = await self._source.resolve(pchannel, newer_than_term=newer_than_term, timeout=timeout)
            s = self._streams.get(pchannel)
            if self._local is not None and address == self._local.address:
                if s is not None:  # the pchannel moved here from another node
                    await s.close()
                    del self._streams[pchannel]
                return term
            # A stream is reused only while it serves the current term: a cached stream to an
            # owner the pchannel has already moved away from would only be abandoned mid-append.
            if s is not None and s.term == term and s.address == address and s.broken is None:
                return s
            if s is not None:
                await s.close()
                del self._streams[pchannel]
            s = self._streams[pchannel] = _Stream(pchannel, address, term)
            return s

    async def append(
        self, pchannel: str, messages: Sequence[common_pb2.Message], *, timeout: float = 30.0, txn: bool = False
    ) -> list[AppendResult]:
        """Append ``messages`` in order; returns once they are persisted.

        With ``txn`` the messages are one transaction: they share one timetick and readers
        see all of them or none.
        """
        stamp_messages(messages)  # the streaming node's span joins the caller's trace (common/tracing)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        stale_term = 0
        while True:
            remaining = max(deadline - loop.time(), 0.1)
            target = await self._stream(pchannel, stale_term, remaining)
            term = target if isinstance(target, int) else target.term
            try:
                if isinstance(target, int):
                    return await self._append_local(pchannel, term, messages, remaining, txn)
                return await self._append_remote(target, messages, remaining, txn)
            except StrataError as err:  # the same errors either way (streamingnode/service/append.py)
                if err.code not in _RETRYABLE or loop.time() >= deadline:
                    raise
                reason = err.message
            self._log.info("append rejected, re-resolving", pchannel=pchannel, term=term, reason=reason)
            await self._source.report_error(pchannel, term, reason)
            stale_term = term
            if isinstance(target, int):
                # The local WAL that refused may still hold the objects (WAL.append takes them over);
                # a Produce request only carried their encoding.
                messages = [_copy(m) for m in messages]
            await asyncio.sleep(0.05)

    async def _append_remote(
        self, stream: _Stream, messages: Sequence[common_pb2.Message], timeout: float, txn: bool
    ) -> list[AppendResult]:
        """Append through the owner's ``Produce`` stream; raises its answer's error (``raise_for_status``)."""
        try:
            resp = await self._send_unless_moved(stream, messages, timeout, txn)
        except (ConnectionError, grpc.aio.AioRpcError) as err:
            await self._drop(stream)
            raise StrataError(
                f"streaming node of {stream.pchannel} unreachable; the write may not have been applied: {err}",
                ErrorCode.UNAVAILABLE,
            ) from err
        except TimeoutError:
            raise StrataError(f"append to {stream.pchannel} timed out", ErrorCode.TIMEOUT) from None
        raise_for_status(resp.status)
        return [AppendResult(r.message_id, r.timetick, tuple(r.sealed_segment_ids)) for r in resp.results]

    async def _append_local(
        self, pchannel: str, term: int, messages: Sequence[common_pb2.Message], timeout: float, txn: bool
    ) -> list[AppendResult]:
        """Append through this process's streaming node; raises ``StrataError`` as ``Produce`` answers."""
        assert self._local is not None
        try:
            async with asyncio.timeout(timeout):
                done = await self._local.append(pchannel, term, messages, txn=txn)
        except TimeoutError:
            raise StrataError(f"append to {pchannel} timed out", ErrorCode.TIMEOUT) from None
        return [AppendResult(a.message_id.to_bytes(), a.timetick, a.sealed_segment_ids) for a in done]

    async def _send_unless_moved(
        self, stream: _Stream, messages: Sequence[common_pb2.Message], timeout: float, txn: bool
    ) -> streaming_pb2.ProduceResponse:
        """The answer to ``messages`` on ``stream``, abandoned if the pchannel moves to a newer term.

        An owner that froze (SIGSTOP, a pause, cut off from etcd) keeps its TCP
        connection and never answers; the coordinator moves its pchannels once
        its session is lost, and waiting any longer would only hit the timeout.
        The move is watched only once the answer is ``WATCH_MOVES_AFTER_SECONDS``
        late: almost every append is answered before that, and a watch costs
        every append two tasks. A move that happened before the watch starts
        is seen at once (``resolve`` returns the newer term it already knows).
        Raises ``TimeoutError`` after ``timeout`` seconds.
        """
        send = stream.submit(messages, txn=txn)
        moved: asyncio.Future[tuple[str, int]] | None = None
        try:
            async with asyncio.timeout(timeout):
                await asyncio.wait([send], timeout=WATCH_MOVES_AFTER_SECONDS)
                if not send.done():
                    moved = asyncio.ensure_future(
                        self._source.resolve(stream.pchannel, newer_than_term=stream.term, timeout=timeout)
                    )
                    either: list[asyncio.Future[Any]] = [send, moved]
                    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                    if not send.done() and moved.exception() is None:
                        raise ConnectionError(f"{stream.pchannel} moved to term {moved.result()[1]} during the append")
                return await send
        finally:
            if not send.done():
                send.cancel()  # its waiter is skipped when the answer comes
            if moved is not None:
                moved.cancel()
                await asyncio.wait([moved])
                if not moved.cancelled():
                    moved.exception()  # retrieved: the one that mattered was raised above

    async def _drop(self, stream: _Stream) -> None:
        async with self._lock:
            if self._streams.get(stream.pchannel) is stream:
                del self._streams[stream.pchannel]
        await stream.close()

    async def close(self) -> None:
        for s in list(self._streams.values()):
            await s.close()
        self._streams.clear()
