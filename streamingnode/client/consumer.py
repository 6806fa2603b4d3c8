"""Read a vchannel (plus every TimeTick) from its pchannel's owner, across ownership changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import structlog

from protos import common_pb2, streaming_pb2, streaming_pb2_grpc
from services.errors import ErrorCode, NotReady
from services.grpcutil import insecure_channel
from streamingnode.client.assignment import AssignmentSource


async def consume(
    source: AssignmentSource,
    pchannel: str,
    vchannel: str,
    *,
    start_after: bytes | None = None,
) -> AsyncIterator[tuple[bytes, common_pb2.Message]]:
    """Yield ``(message_id, message)`` forever, resuming after the last id on reconnect.

    Only cancellation (or the caller leaving the loop) ends it.
    """
    log = structlog.get_logger().bind(component="consumer", vchannel=vchannel)
    last = start_after
    stale_term = 0
    while True:
        try:
            address, term = await source.resolve(pchannel, newer_than_term=stale_term, timeout=5.0)
        except NotReady:
            log.info("waiting for the owner of the pchannel", pchannel=pchannel, stale_term=stale_term)
            continue
        req = streaming_pb2.ConsumeRequest(
            pchannel=pchannel,
            term=term,
            vchannel=vchannel,
            policy=streaming_pb2.DELIVER_START_AFTER if last else streaming_pb2.DELIVER_ALL,
            message_id=last or b"",
        )
        channel = insecure_channel(address)
        try:
            async for resp in streaming_pb2_grpc.StreamingNodeHandlerStub(channel).Consume(req):
                if resp.status.code != ErrorCode.OK:
                    log.info("consume rejected", term=term, reason=resp.status.reason)
                    await source.report_error(pchannel, term, resp.status.reason)
                    stale_term = term
                    break
                for item in resp.messages:
                    last = item.message_id
                    yield item.message_id, item.message
        except grpc.aio.AioRpcError as err:
            log.info("consume stream broken", term=term, error=err.code().name)
        except (asyncio.CancelledError, GeneratorExit):
            raise
        except Exception:  # anything else: resume after the last delivered id, never give up
            log.exception("consume stream failed", term=term)
        finally:
            await channel.close()
        await asyncio.sleep(0.2)
