"""``ProduceStream``: one ``Produce`` stream to a pchannel's owner, shared by concurrent appends.

Requests and answers are matched by id. Appends queued while a request is being written are
coalesced into the next request, up to ``MAX_MERGED_MESSAGES`` or ``MAX_MERGED_BYTES`` (a
transaction always travels alone). Used by ``remote.py``; a broken stream fails every waiter.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from common.grpcutil import internal_channel
from common.message import size_bound
from common.tasks import BackgroundTasks
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc

# A coalesced Produce request stops growing past this many messages or bytes.
MAX_MERGED_MESSAGES = 1024
MAX_MERGED_BYTES = 4 << 20


@dataclass(slots=True)
class _Waiter:
    messages: Sequence[common_pb2.Message]
    txn: bool
    future: asyncio.Future[streaming_pb2.ProduceResponse]


class ProduceStream:
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
