"""``gather_all``: results in order; a lone awaitable runs in the caller's task."""

from __future__ import annotations

import asyncio

import pytest

from common.aiogather import gather_all


async def _task_and(value: int) -> tuple[asyncio.Task[object] | None, int]:
    await asyncio.sleep(0)
    return asyncio.current_task(), value


async def test_one_awaitable_runs_in_the_callers_task() -> None:
    [(task, value)] = await gather_all([_task_and(7)])
    assert (task, value) == (asyncio.current_task(), 7)


async def test_several_run_as_tasks_and_keep_their_order() -> None:
    results = await gather_all([_task_and(i) for i in range(3)])
    assert [v for _, v in results] == [0, 1, 2]
    assert all(t is not asyncio.current_task() for t, _ in results)


async def test_a_failure_propagates() -> None:
    async def fail() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await gather_all([fail()])
    with pytest.raises(ValueError, match="no"):
        await gather_all([_task_and(1), fail()])


async def test_nothing_gives_nothing() -> None:
    assert await gather_all([]) == []
