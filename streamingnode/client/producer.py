"""Append messages to a pchannel's WAL through its owner's ``Produce`` stream.

One long-lived stream per pchannel; requests and answers are matched by id.
A "not appended" answer (wrong term, channel not here, WAL closing) makes the
producer report the error, wait for a newer term and retry. A broken
connection fails the call instead: the append may or may not have happened,
and retrying could duplicate it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
import structlog

from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from services.errors import ErrorCode, StrataError, error_from_code
from services.grpcutil import insecure_channel
from streamingnode.client.assignment import AssignmentSource

_RETRYABLE = {
    ErrorCode.UNMATCHED_CHANNEL_TERM,
    ErrorCode.CHANNEL_NOT_EXIST,
    ErrorCode.CHANNEL_FENCED,
    ErrorCode.WAL_CLOSED,
}


@dataclass(frozen=True, slots=True)
class AppendResult:
    message_id: bytes
    timetick: int


class _Stream:
    def __init__(self, pchannel: str, address: str, term: int) -> None:
        self.pchannel, self.address, self.term = pchannel, address, term
        self._channel = insecure_channel(address)
        self._call = streaming_pb2_grpc.StreamingNodeHandlerStub(self._channel).Produce()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[streaming_pb2.ProduceResponse]] = {}
        self._write_lock = asyncio.Lock()
        self._reader = asyncio.create_task(self._read(), name=f"produce-reader-{pchannel}")
        self.broken: BaseException | None = None

    async def _read(self) -> None:
        try:
            while True:
                resp = await self._call.read()
                if resp is grpc.aio.EOF:
                    raise ConnectionError("produce stream closed by the server")
                fut = self._pending.pop(resp.request_id, None)
                if fut is not None and not fut.done():
                    fut.set_result(resp)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the stream is dead: fail every waiter
            self.broken = err
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(err)
            self._pending.clear()

    async def send(
        self, messages: Sequence[common_pb2.Message], timeout: float, *, txn: bool = False
    ) -> streaming_pb2.ProduceResponse:
        if self.broken is not None:
            raise ConnectionError(str(self.broken))
        rid = next(self._ids)
        fut: asyncio.Future[streaming_pb2.ProduceResponse] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        req = streaming_pb2.ProduceRequest(
            request_id=rid, pchannel=self.pchannel, term=self.term, messages=messages, txn=txn
        )
        async with self._write_lock:
            await self._call.write(req)
        return await asyncio.wait_for(fut, timeout)

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        self._call.cancel()
        await self._channel.close()


class Producer:
    """Appends to any pchannel, following ownership changes."""

    def __init__(self, source: AssignmentSource) -> None:
        self._source = source
        self._streams: dict[str, _Stream] = {}
        self._lock = asyncio.Lock()
        self._log = structlog.get_logger().bind(component="producer")

    async def _stream(self, pchannel: str, newer_than_term: int, timeout: float) -> _Stream:
        async with self._lock:
            s = self._streams.get(pchannel)
            if s is not None and s.term > newer_than_term and s.broken is None:
                return s
            if s is not None:
                await s.close()
                del self._streams[pchannel]
            address, term = await self._source.resolve(pchannel, newer_than_term=newer_than_term, timeout=timeout)
            s = self._streams[pchannel] = _Stream(pchannel, address, term)
            return s

    async def append(
        self, pchannel: str, messages: Sequence[common_pb2.Message], *, timeout: float = 30.0, txn: bool = False
    ) -> list[AppendResult]:
        """Append ``messages`` in order; returns once they are persisted.

        With ``txn`` the messages are one transaction: they share one timetick and readers
        see all of them or none.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        stale_term = 0
        while True:
            remaining = max(deadline - loop.time(), 0.1)
            stream = await self._stream(pchannel, stale_term, remaining)
            try:
                resp = await stream.send(messages, remaining, txn=txn)
            except (ConnectionError, grpc.aio.AioRpcError) as err:
                await self._drop(stream)
                raise StrataError(
                    f"streaming node of {pchannel} unreachable; the write may not have been applied: {err}",
                    ErrorCode.UNAVAILABLE,
                ) from err
            except TimeoutError:
                raise StrataError(f"append to {pchannel} timed out", ErrorCode.TIMEOUT) from None
            if resp.status.code == ErrorCode.OK:
                return [AppendResult(r.message_id, r.timetick) for r in resp.results]
            if resp.status.code in _RETRYABLE and loop.time() < deadline:
                self._log.info("append rejected, re-resolving", pchannel=pchannel, term=stream.term,
                               reason=resp.status.reason)
                await self._source.report_error(pchannel, stream.term, resp.status.reason)
                stale_term = stream.term
                await asyncio.sleep(0.05)
                continue
            raise error_from_code(resp.status.code, resp.status.reason)

    async def _drop(self, stream: _Stream) -> None:
        async with self._lock:
            if self._streams.get(stream.pchannel) is stream:
                del self._streams[stream.pchannel]
        await stream.close()

    async def close(self) -> None:
        for s in list(self._streams.values()):
            await s.close()
        self._streams.clear()
