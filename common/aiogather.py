"""``asyncio.gather`` without the task when there is only one awaitable."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import TypeVar

T = TypeVar("T")


async def gather_all(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """Every result, in order. One awaitable runs in the caller's task: ``gather`` would wrap it
    in a task of its own, which a search that one node answers for one shard pays on every call."""
    if len(awaitables) == 1:
        return [await awaitables[0]]
    return list(await asyncio.gather(*awaitables))
