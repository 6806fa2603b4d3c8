"""``StreamingNodeHandler``: Produce (bidirectional), Consume (server stream), RequestTimeTick, GetCollectionRows."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import structlog

from common.errors import ErrorCode, StrataError
from common.grpcutil import error_status, ok_status, rpc_method
from common.message import Outgoing, size_bound
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from streamingnode.service.append import append
from streamingnode.walimpls.wal import DeliverPolicy, MessageID
from streamingnode.walmanager.manager import WALManager

log = structlog.get_logger().bind(component="handler-service")

# Consume batching: at most this many messages / bytes per response, read ahead at most CONSUME_QUEUE.
CONSUME_BATCH_MESSAGES = 1024
CONSUME_BATCH_BYTES = 4 << 20
CONSUME_QUEUE = 4096


def _policy(req: streaming_pb2.ConsumeRequest) -> DeliverPolicy:
    match req.policy:
        case streaming_pb2.DELIVER_ALL:
            return DeliverPolicy.all()
        case streaming_pb2.DELIVER_LATEST:
            return DeliverPolicy.latest()
        case streaming_pb2.DELIVER_START_FROM:
            return DeliverPolicy.start_from(MessageID.from_bytes(req.message_id))
        case streaming_pb2.DELIVER_START_AFTER:
            return DeliverPolicy.start_after(MessageID.from_bytes(req.message_id))
    raise StrataError(f"unknown deliver policy {req.policy}", ErrorCode.INVALID_ARGUMENT)


class HandlerService(streaming_pb2_grpc.StreamingNodeHandlerServicer):
    def __init__(self, manager: WALManager) -> None:
        self._manager = manager

    async def Produce(
        self, request_iterator: AsyncIterator[streaming_pb2.ProduceRequest], context: grpc.aio.ServicerContext
    ) -> None:
        # Requests are appended concurrently (so they share group commits). Each append writes
        # its own answer as soon as it is durable: no hop through a queue and a response
        # generator, which the WAL's readers (woken just after the appenders) would run before.
        writing = asyncio.Lock()  # one write in flight on a stream at a time

        async def one(req: streaming_pb2.ProduceRequest) -> None:
            try:
                # Decoded here, once: a message Strata cannot read refuses this request alone.
                messages = [Outgoing.decoded(m) for m in req.messages]
                done = await append(self._manager, req.pchannel, req.term, messages, txn=req.txn)
                results = [
                    streaming_pb2.AppendResult(
                        message_id=a.message_id.to_bytes(), timetick=a.timetick, sealed_segment_ids=a.sealed_segment_ids
                    )
                    for a in done
                ]
                resp = streaming_pb2.ProduceResponse(request_id=req.request_id, status=ok_status(), results=results)
            except StrataError as err:  # all that append() raises: answered in the status
                resp = streaming_pb2.ProduceResponse(request_id=req.request_id, status=error_status(err))
            async with writing:
                await context.write(resp)

        async with asyncio.TaskGroup() as tg:
            async for req in request_iterator:
                tg.create_task(one(req))

    async def Consume(
        self, request: streaming_pb2.ConsumeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[streaming_pb2.ConsumeResponse]:
        try:
            wal = self._manager.get(request.pchannel, request.term)
            policy = _policy(request)
        except StrataError as err:
            yield streaming_pb2.ConsumeResponse(status=error_status(err))
            return
        # The scanner holds the log from its start on before the start is checked: no truncation
        # can come in between.
        scanner = wal.scanner(policy, request.vchannel)
        try:
            wal.check_start(policy)
        except StrataError as err:
            scanner.release()
            yield streaming_pb2.ConsumeResponse(status=error_status(err))
            return
        # A pump reads ahead into a bounded queue; each response carries what is already there.
        queue: asyncio.Queue[tuple[MessageID, common_pb2.Message] | None] = asyncio.Queue(CONSUME_QUEUE)

        async def pump() -> None:
            try:
                async for item in scanner:
                    await queue.put(item)
            finally:
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(None)

        reader = asyncio.create_task(pump(), name=f"consume-pump-{request.pchannel}")
        try:
            ended = False
            while not ended:
                item = await queue.get()
                if item is None:
                    break
                batch, size = [item], size_bound(item[1])
                while len(batch) < CONSUME_BATCH_MESSAGES and size < CONSUME_BATCH_BYTES:
                    try:
                        nxt = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        break
                    if nxt is None:
                        ended = True
                        break
                    batch.append(nxt)
                    size += size_bound(nxt[1])
                yield streaming_pb2.ConsumeResponse(
                    status=ok_status(),
                    messages=[streaming_pb2.ConsumedMessage(message_id=i.to_bytes(), message=m) for i, m in batch],
                )
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            scanner.release()
        # The scanner failed (a reader idle so long the WAL abandoned it: POSITION_TRUNCATED), or the
        # WAL closed under us (removed or moved): the consumer rebuilds, or re-resolves.
        failed = reader.exception() if reader.done() and not reader.cancelled() else None
        if not isinstance(failed, StrataError):
            failed = StrataError(f"wal {request.pchannel} closed", ErrorCode.WAL_CLOSED)
        yield streaming_pb2.ConsumeResponse(status=error_status(failed))

    @rpc_method(streaming_pb2.GetCollectionRowsResponse)
    async def GetCollectionRows(
        self, request: streaming_pb2.GetCollectionRowsRequest, context: grpc.aio.ServicerContext
    ) -> streaming_pb2.GetCollectionRowsResponse:
        wal = self._manager.get(request.pchannel, request.term)
        return streaming_pb2.GetCollectionRowsResponse(
            status=ok_status(), rows=wal.collection_rows(request.collection_id)
        )

    @rpc_method(streaming_pb2.RequestTimeTickResponse)
    async def RequestTimeTick(
        self, request: streaming_pb2.RequestTimeTickRequest, context: grpc.aio.ServicerContext
    ) -> streaming_pb2.RequestTimeTickResponse:
        wal = self._manager.get(request.pchannel, request.term)
        timetick = await wal.request_tick(request.timestamp)
        return streaming_pb2.RequestTimeTickResponse(status=ok_status(), timetick=timetick)
