"""Keeping an etcd lease alive, and knowing when it may be gone.

A refresh keeps the lease until ``sent + ttl`` on etcd's clock at the latest,
so a holder that counts from the send time of its last successful refresh
knows, on its own clock, a moment by which the lease may have expired, even
when etcd cannot be reached at all (or the process was frozen). A margin
covers clock-rate drift. Holders act on that moment *before* etcd can hand
what they own to someone else.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import aetcd
import structlog


async def keep_alive(
    lease: aetcd.Lease, ttl: float, on_lost: Callable[[str], None], log: structlog.BoundLogger
) -> None:
    """Refresh ``lease`` every ttl/3 until cancelled; call ``on_lost(reason)`` once and return when it may be gone."""
    margin = max(ttl / 5, 0.5)
    last_ok_sent = time.monotonic()
    while True:
        sent = time.monotonic()
        try:
            async with asyncio.timeout(max(ttl / 4, 0.5)):
                resp = await lease.refresh()
            if resp is not None and resp.TTL <= 0:
                on_lost("lease expired on etcd")
                return
            last_ok_sent = sent
            pause = ttl / 3
        except asyncio.CancelledError:
            raise
        except Exception as err:  # a flaky etcd: retry until the deadline below
            log.warning("lease refresh failed", error=str(err) or type(err).__name__)
            pause = 0.5
        remaining = last_ok_sent + ttl - margin - time.monotonic()
        if remaining <= 0:
            on_lost("lease not refreshed within its TTL")
            return
        await asyncio.sleep(min(pause, remaining))
