"""``BackgroundTasks``: the owner of one component's long-lived and fire-and-forget tasks.

A bare ``asyncio.create_task`` leaves three things to every caller: the event loop holds
tasks only weakly (one nobody references can vanish mid-run), an exception nobody awaits
surfaces only as "Task exception was never retrieved" at garbage collection, and nobody
cancels the task when its component stops. A component owns one ``BackgroundTasks``
instead; ``start()`` names and holds each task, an unexpected exception is logged once
(structlog, bound to the component) and handed to an optional callback, and ``stop()``
cancels every task and waits for them, for a bounded time.

Short-lived fan-out that one function awaits (``asyncio.TaskGroup``, ``gather``) needs no
owner: the function is its owner.

Lifetime: open -> closed (``stop()``, final). Once closed, ``start()`` refuses new tasks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import structlog

T = TypeVar("T")

# How long stop() waits for cancelled tasks to finish by default.
STOP_TIMEOUT_SECONDS = 10.0

ErrorCallback = Callable[[BaseException], None]


class BackgroundTasks:
    """The tasks of one component: started by name, held until done, stopped together.

    ``component`` and ``fields`` bind the logger, as every Strata component's logger is bound.
    """

    def __init__(self, component: str, **fields: Any) -> None:
        self._log = structlog.get_logger().bind(component=component, **fields)
        self._tasks: dict[asyncio.Task[Any], ErrorCallback | None] = {}
        self._once: dict[str, asyncio.Task[Any]] = {}
        self._closed = False

    def start(
        self, coro: Coroutine[Any, Any, T], *, name: str, on_error: ErrorCallback | None = None
    ) -> asyncio.Task[T]:
        """Run ``coro`` as a task named ``name``, held until it ends.

        If it ends with an exception (not a cancellation), the exception is logged once and
        passed to ``on_error``; whoever awaits the task still gets it. Never blocks.
        Raises ``RuntimeError`` once ``stop()`` has begun (``coro`` is closed unrun).
        """
        if self._closed:
            coro.close()
            raise RuntimeError(f"cannot start {name}: its owner is stopped")
        task = asyncio.create_task(coro, name=name)
        self._tasks[task] = on_error
        task.add_done_callback(self._finished)
        return task

    def once(self, name: str, start: Callable[[], Coroutine[Any, Any, T]]) -> asyncio.Task[T]:
        """The task named ``name``: run from ``start()`` on the first call, the same task on every later one.

        For work every caller waits for but that must run only once, such as a close that
        several callers ask for (each may ``asyncio.shield`` it, so the one that gives up
        does not stop it for the others).
        """
        task = self._once.get(name)
        if task is None:
            task = self._once[name] = self.start(start(), name=name)
        return task

    def restarting(
        self,
        factory: Callable[[], Awaitable[None]],
        *,
        name: str,
        delay_seconds: float = 1.0,
    ) -> asyncio.Task[None]:
        """Run ``factory()`` as a task named ``name``; whenever it fails or returns, log and run it again.

        Waits ``delay_seconds`` between runs. Only cancellation (``stop()``, ``cancel()``) ends it.
        """

        async def again() -> None:
            while True:
                try:
                    await factory()
                    self._log.warning("background task returned, restarting", task=name)
                except asyncio.CancelledError:
                    raise
                except Exception as err:  # task boundary: log, wait, run again
                    self._log.error("background task failed, restarting", task=name, exc_info=err)
                await asyncio.sleep(delay_seconds)

        return self.start(again(), name=name)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        on_error = self._tasks.pop(task, None)
        if task.cancelled():
            return
        err = task.exception()  # retrieved here: asyncio does not warn about it again
        if err is None:
            return
        self._log.error("background task failed", task=task.get_name(), exc_info=err)
        if on_error is not None:
            try:
                on_error(err)
            except Exception:  # a callback's own failure must not hide the task's
                self._log.exception("background task error callback failed", task=task.get_name())

    @property
    def running(self) -> int:
        """How many started tasks have not ended yet."""
        return len(self._tasks)

    def names(self) -> list[str]:
        """The names of the tasks that have not ended yet."""
        return sorted(t.get_name() for t in self._tasks)

    async def idle(self) -> None:
        """Return once no task runs (also those started while waiting); cancels nothing."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def cancel(self, task: asyncio.Task[Any] | None, *, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Cancel one task (``None``: nothing) and wait up to ``timeout`` seconds for it to end.

        Its exception, if it ended with one before the cancel, is logged (not raised).
        """
        if task is None:
            return
        task.cancel()
        await self._wait([task], timeout)

    async def stop(self, *, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
        """Refuse new tasks, cancel every running one and wait up to ``timeout`` seconds for them.

        A task still running after ``timeout`` (it swallowed the cancellation, or its cleanup
        blocks) is logged and left behind. Idempotent.
        """
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await self._wait(tasks, timeout)

    async def _wait(self, tasks: list[asyncio.Task[Any]], timeout: float) -> None:
        if not tasks:
            return
        # asyncio.wait neither raises the tasks' exceptions nor cancels them on our own cancellation.
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        if pending:
            self._log.warning("background tasks did not stop", tasks=sorted(t.get_name() for t in pending))
