"""Waiting for tsafe to reach a read's guarantee timestamp, asking for the TimeTick that gets it there.

A Strong read's guarantee timestamp is fresh from the TSO, so tsafe is below it
until the pchannel's next TimeTick: up to the tick interval (200 ms) on an idle
pchannel. While it waits, the delegator asks the pchannel's owner for a
TimeTick at or above the timestamp (``streamingnode.client.timetick``); the
owner publishes one at once, after every message below it, and the consume
loop applies it as any TimeTick. The guarantee stays exact: the read is
answered at tsafe, and tsafe passes only TimeTicks that follow everything
stamped below them.

The request is a hint: if it fails (the owner moved, an older streaming node
without the call) the read waits for the regular TimeTick, as before.
"""

from __future__ import annotations

import asyncio

import grpc
import structlog

from common.errors import StrataError
from querynode.delegator.tsafe import TSafe
from streamingnode.client.timetick import TimeTickRequester

log = structlog.get_logger().bind(component="delegator-readable")


async def wait_readable(
    tsafe: TSafe, ticks: TimeTickRequester | None, pchannel: str, guarantee_ts: int, *, timeout: float, what: str
) -> int:
    """``tsafe.wait(guarantee_ts)``, asking ``pchannel``'s owner for a TimeTick while tsafe is below it.

    Returns the read timestamp (tsafe); raises ``ReadTimeout`` as ``TSafe.wait`` does. Without
    ``ticks``, or when tsafe is there already, nothing is asked.
    """
    if ticks is None or tsafe.value >= guarantee_ts:
        return await tsafe.wait(guarantee_ts, timeout=timeout, what=what)
    asking = asyncio.ensure_future(_ask(ticks, pchannel, guarantee_ts, timeout))
    try:
        return await tsafe.wait(guarantee_ts, timeout=timeout, what=what)
    finally:
        # Usually answered already; a request still out is withdrawn (others may still share it).
        asking.cancel()
        await asyncio.wait([asking])  # raises nothing of its own; a cancellation of this read still does


async def _ask(ticks: TimeTickRequester, pchannel: str, guarantee_ts: int, timeout: float) -> None:
    try:
        await ticks.request(pchannel, guarantee_ts, timeout=timeout)
    except (StrataError, grpc.aio.AioRpcError, TimeoutError) as err:
        log.debug("timetick request failed, waiting for the next tick", pchannel=pchannel, error=str(err))
    except Exception:  # task boundary: the read goes on waiting for the regular TimeTick
        log.exception("timetick request failed", pchannel=pchannel)
