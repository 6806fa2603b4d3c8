"""Awaiting nats-py calls without losing a cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def settled(call: Awaitable[T]) -> T:
    """Await a nats-py call; a cancellation requested meanwhile is raised even if the call ate it.

    nats-py waits with ``asyncio.wait_for``, which on Python 3.11 can swallow a
    cancellation that arrives as the awaited future completes, and its flush path
    catches ``CancelledError`` outright. A task cancelled at that moment would go on
    (a scanner would tail forever, a writer would never stop): so every nats-py call
    that may wait goes through here.
    """
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    result = await call
    if task is not None and task.cancelling() > before:
        raise asyncio.CancelledError
    return result
