"""``BackgroundTasks``: failures logged once, stop cancels and waits, no task lost while it runs."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest
from structlog.testing import capture_logs

from common.tasks import BackgroundTasks


class Boom(Exception):
    pass


async def _fail() -> None:
    await asyncio.sleep(0)
    raise Boom("broken")


async def test_an_unexpected_exception_is_logged_once_with_the_component_and_given_to_the_callback() -> None:
    owner = BackgroundTasks("flusher", pchannel="p1")
    seen: list[BaseException] = []
    with capture_logs() as logs:
        task = owner.start(_fail(), name="flusher-p1", on_error=seen.append)
        await asyncio.wait([task])
        await asyncio.sleep(0)  # done callbacks run on the next loop turn
    failed = [e for e in logs if e["event"] == "background task failed"]
    assert len(failed) == 1
    assert failed[0]["component"] == "flusher" and failed[0]["pchannel"] == "p1"
    assert failed[0]["task"] == "flusher-p1" and isinstance(failed[0]["exc_info"], Boom)
    assert len(seen) == 1 and isinstance(seen[0], Boom)
    assert owner.running == 0
    with pytest.raises(Boom):  # whoever awaits it still gets the exception
        task.result()


async def test_a_cancelled_or_finished_task_is_not_logged_as_failed() -> None:
    owner = BackgroundTasks("x")
    with capture_logs() as logs:
        done = owner.start(asyncio.sleep(0), name="quick")
        forever = owner.start(asyncio.sleep(3600), name="forever")
        await asyncio.wait([done])
        await owner.stop()
    assert forever.cancelled()
    assert not [e for e in logs if e["log_level"] in ("error", "warning")]


async def test_stop_cancels_every_task_and_waits_for_its_cleanup() -> None:
    owner = BackgroundTasks("x")
    cleaned: list[str] = []

    async def loop(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0.01)  # cleanup that itself awaits: stop() must wait for it
            cleaned.append(name)

    tasks = [owner.start(loop(f"t{i}"), name=f"t{i}") for i in range(3)]
    await asyncio.sleep(0)
    await owner.stop()
    assert sorted(cleaned) == ["t0", "t1", "t2"]
    assert all(t.cancelled() for t in tasks)
    assert owner.running == 0


async def test_stop_is_bounded_when_a_task_ignores_cancellation() -> None:
    owner = BackgroundTasks("x")
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                pass  # swallowed on purpose: the owner must not hang on it

    task = owner.start(stubborn(), name="stubborn")
    await asyncio.sleep(0)
    with capture_logs() as logs:
        await owner.stop(timeout=0.05)
    assert not task.done()
    assert [e["tasks"] for e in logs if e["event"] == "background tasks did not stop"] == [["stubborn"]]
    release.set()
    await task


async def test_a_stopped_owner_refuses_new_tasks_and_closes_their_coroutine() -> None:
    owner = BackgroundTasks("x")
    await owner.stop()
    coro = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="stopped"):
        owner.start(coro, name="late")
    assert coro.cr_frame is None  # closed: no "coroutine was never awaited" warning


async def test_a_task_nobody_else_references_is_kept_alive_while_it_waits() -> None:
    owner = BackgroundTasks("x")

    async def wait_forever() -> None:
        # A future only this task references: the event loop holds waiting tasks weakly, so without
        # the owner the task and its future form a cycle that the garbage collector frees.
        await asyncio.get_running_loop().create_future()

    ref = weakref.ref(owner.start(wait_forever(), name="unreferenced"))
    await asyncio.sleep(0)
    gc.collect()
    task = ref()
    assert task is not None and not task.done()
    assert owner.names() == ["unreferenced"]
    del task
    await owner.stop()
    assert owner.running == 0


async def test_without_an_owner_such_a_task_is_collected() -> None:
    """The hazard the owner removes, shown on a bare task (so the test above is not vacuous)."""

    async def wait_forever() -> None:
        await asyncio.get_running_loop().create_future()

    ref = weakref.ref(asyncio.get_running_loop().create_task(wait_forever()))
    await asyncio.sleep(0)
    gc.collect()
    assert ref() is None


async def test_once_starts_one_task_for_every_caller() -> None:
    owner = BackgroundTasks("x")
    runs = 0

    async def close() -> int:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0.01)
        return runs

    first = owner.once("close", close)
    second = owner.once("close", close)
    assert first is second
    assert await asyncio.shield(first) == 1
    assert owner.once("close", close) is first  # also after it ended
    assert runs == 1


async def test_restarting_runs_again_after_a_failure_until_stopped() -> None:
    owner = BackgroundTasks("x")
    runs = 0
    third = asyncio.Event()

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs >= 3:
            third.set()
            await asyncio.Event().wait()
        raise Boom(f"run {runs}")

    with capture_logs() as logs:
        owner.restarting(flaky, name="flaky", delay_seconds=0)
        async with asyncio.timeout(5):
            await third.wait()
        await owner.stop()
    assert runs == 3
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["background task failed, restarting"] * 2


async def test_idle_waits_for_tasks_started_while_waiting() -> None:
    owner = BackgroundTasks("x")
    order: list[str] = []

    async def child() -> None:
        await asyncio.sleep(0.01)
        order.append("child")

    async def parent() -> None:
        await asyncio.sleep(0)
        owner.start(child(), name="child")
        order.append("parent")

    owner.start(parent(), name="parent")
    await owner.idle()
    assert order == ["parent", "child"]


async def test_cancel_stops_one_task_and_leaves_the_others() -> None:
    owner = BackgroundTasks("x")
    one = owner.start(asyncio.sleep(3600), name="one")
    other = owner.start(asyncio.sleep(3600), name="other")
    await asyncio.sleep(0)
    await owner.cancel(one)
    assert one.cancelled() and not other.done()
    assert owner.names() == ["other"]
    await owner.stop()
