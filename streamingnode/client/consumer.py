"""Read a vchannel (plus every TimeTick) from its pchannel's owner, across ownership changes.

Each stream is tied to one ``(owner, term)``. It is left, and the read resumes
after the last delivered message id on the new owner, when

* the owner refuses it (wrong term, WAL closed): the error is reported to the
  coordinator and the consumer waits for a newer term;
* the connection breaks: the same owner is tried again;
* the pchannel moves to a newer term while the stream is open. An owner that
  froze (SIGSTOP, a long pause, cut off from etcd) keeps its TCP connection
  and sends nothing; without this the consumer, and every read waiting on its
  tsafe, would wait until the frozen process woke up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import grpc
import structlog

from common.errors import NotReady, PositionTruncated, StrataError
from common.grpcutil import internal_channel
from common.rpcstatus import raise_for_status
from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from streamingnode.client.assignment import AssignmentSource


async def consume(
    source: AssignmentSource,
    pchannel: str,
    vchannel: str,
    *,
    start_after: bytes | None = None,
    start_from: bytes | None = None,
) -> AsyncIterator[tuple[bytes, common_pb2.Message]]:
    """Yield ``(message_id, message)`` forever, resuming after the last id on reconnect.

    Starts at the beginning of the log, after ``start_after`` or at ``start_from``
    (inclusive). Only cancellation (or the caller leaving the loop) ends it, or
    ``PositionTruncated`` when the position to resume from is no longer in the log:
    the caller must rebuild what it holds from object storage and a newer position.
    """
    log = structlog.get_logger().bind(component="consumer", vchannel=vchannel)
    last = start_after
    first = start_from if start_after is None else None
    stale_term = 0
    while True:
        try:
            address, term = await source.resolve(pchannel, newer_than_term=stale_term, timeout=5.0)
        except NotReady:
            log.info("waiting for the owner of the pchannel", pchannel=pchannel, stale_term=stale_term)
            continue
        if last:
            policy, at = streaming_pb2.DELIVER_START_AFTER, last
        elif first:
            policy, at = streaming_pb2.DELIVER_START_FROM, first
        else:
            policy, at = streaming_pb2.DELIVER_ALL, b""
        req = streaming_pb2.ConsumeRequest(
            pchannel=pchannel, term=term, vchannel=vchannel, policy=policy, message_id=at
        )
        channel = internal_channel(address)
        call = streaming_pb2_grpc.StreamingNodeHandlerStub(channel).Consume(req)
        moved = asyncio.ensure_future(_newer_term(source, pchannel, term))
        try:
            while True:
                resp = await _read_unless_moved(call, moved)
                if resp is None:
                    log.info("pchannel moved, leaving its old owner", term=term, new_term=moved.result())
                    stale_term = term
                    break
                try:
                    raise_for_status(resp.status)
                except PositionTruncated:
                    raise  # the caller rebuilds from a newer position
                except StrataError as err:  # not served there (any more): ask who owns it now
                    log.info("consume rejected", term=term, reason=err.message)
                    await source.report_error(pchannel, term, err.message)
                    stale_term = term
                    break
                for item in resp.messages:
                    last = item.message_id
                    yield item.message_id, item.message
        except grpc.aio.AioRpcError as err:
            log.info("consume stream broken", term=term, error=err.code().name)
        except _StreamEnded:
            log.info("consume stream ended", term=term)
        except (asyncio.CancelledError, GeneratorExit, PositionTruncated):
            raise
        except Exception:  # anything else: resume after the last delivered id, never give up
            log.exception("consume stream failed", term=term)
        finally:
            moved.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await moved
            call.cancel()
            await channel.close()
        await asyncio.sleep(0.2)


async def _newer_term(source: AssignmentSource, pchannel: str, term: int) -> int:
    """Return the pchannel's term once the assignment names one above ``term``; waits as long as needed."""
    while True:
        try:
            _, newer = await source.resolve(pchannel, newer_than_term=term, timeout=60.0)
            return newer
        except NotReady:
            continue


class _StreamEnded(Exception):
    """The server closed the stream without a status."""


async def _read_unless_moved(
    call: grpc.aio.UnaryStreamCall, moved: asyncio.Future[int]
) -> streaming_pb2.ConsumeResponse | None:
    """The next response of ``call``; None if ``moved`` completed first; ``_StreamEnded`` at its end.

    A response that is already there wins over a move: it was sent by the owner of
    its term before the move, and the new owner resumes after the last id delivered.
    """
    read = asyncio.ensure_future(call.read())
    try:
        await asyncio.wait([read, moved], return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        read.cancel()
        raise
    if read.done():
        resp = read.result()
        if resp is grpc.aio.EOF:
            raise _StreamEnded()
        assert isinstance(resp, streaming_pb2.ConsumeResponse)
        return resp
    read.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await read
    moved.result()  # a failed lookup raises here: the caller retries the same owner
    return None
