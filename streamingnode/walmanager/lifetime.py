"""``WALLifetime``: the expected/current state machine of one pchannel (ARCHITECTURE §4.3).

``open(term)`` and ``remove(term)`` only move the *expected* state forward and
wait; one worker task per pchannel moves the *current* state after it, one
step at a time (see ``state.next_step``). The worker is owned by the lifetime,
not by the callers, so a step runs to completion even when the RPC that asked
for it is cancelled: the current state never stays half-way (a WAL opened but
not published, or closed but still published as available).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import assert_never

import structlog

from common.errors import (
    ChannelNotExist,
    ErrorCode,
    IgnoredOperation,
    StrataError,
    UnmatchedChannelTerm,
    WALClosed,
    error_from_code,
)
from common.tasks import BackgroundTasks
from streamingnode.wal.wal import WAL
from streamingnode.walmanager.state import INITIAL, Step, WALState, next_step

WALFactory = Callable[[str, int], Awaitable[WAL]]
"""``factory(pchannel, term)`` opens and starts the WAL of ``pchannel`` at ``term``."""

WALHook = Callable[[WAL], Awaitable[None]]
"""Called with a WAL right after it opened (``on_open``) or right before it closes (``on_close``)."""

# Pause after an unexpected worker error so that a bug cannot spin the loop.
_RETRY_DELAY = 0.1


class _Watched:
    """A state value behind a condition: writers publish, readers wait for a predicate."""

    def __init__(self, value: WALState) -> None:
        self.value = value
        self.changed = asyncio.Condition()

    async def publish(self, value: WALState) -> None:
        async with self.changed:
            self.value = value
            self.changed.notify_all()


class WALLifetime:
    """Owns the WAL of one pchannel across terms.

    Created by ``WALManager`` on the first request for the pchannel; lives
    until :meth:`close`. Only the worker task opens, closes and publishes.
    """

    def __init__(
        self,
        pchannel: str,
        factory: WALFactory,
        *,
        on_open: WALHook | None = None,
        on_close: WALHook | None = None,
    ) -> None:
        self.pchannel = pchannel
        self._factory = factory
        self._on_open = on_open
        self._on_close = on_close
        self._expected = _Watched(INITIAL)
        self._current = _Watched(INITIAL)
        self._wal: WAL | None = None
        # The exception behind the current ``(term, False, error)`` state, re-raised to open(term).
        self._open_error: tuple[int, Exception] | None = None
        self._closing = False  # set by close(): the worker stops taking steps
        self._closed = False  # set by the worker when it exits: the WAL is closed
        self._log = structlog.get_logger().bind(component="wal-lifetime", pchannel=pchannel)
        self._tasks = BackgroundTasks("wal-lifetime", pchannel=pchannel)
        self._worker = self._tasks.start(self._run(), name=f"wal-lifetime-{pchannel}")

    @property
    def current(self) -> WALState:
        """What exists now."""
        return self._current.value

    @property
    def expected(self) -> WALState:
        """What was asked for last."""
        return self._expected.value

    async def open(self, term: int) -> None:
        """Make the WAL of ``term`` available; returns once it is open.

        Raises ``IgnoredOperation`` at once if ``(term, True)`` is not later
        than the expected state (a stale or repeated request). After waiting,
        raises ``UnmatchedChannelTerm`` if a newer term overtook this one, the
        open error (same code) if opening failed, ``IgnoredOperation`` if a
        remove of the same term overtook it, and ``WALClosed`` if the lifetime
        closed. Cancelling the caller only stops the wait; the worker still
        opens the WAL.
        """
        target = WALState(term, True)
        state = await self._request(target)
        if self._closed:
            raise WALClosed(f"wal lifetime of {self.pchannel} closed while opening term {term}")
        if state.term > term:
            raise UnmatchedChannelTerm(f"open {self.pchannel} at term {term}: overtaken by term {state.term}")
        if state.available:
            return
        if state.error is not None:
            raise self._error_of_failed_open(term, state.error)
        raise IgnoredOperation(f"open {self.pchannel} at term {term}: overtaken by a remove of the same term")

    async def remove(self, term: int) -> None:
        """Make sure no WAL of ``term`` or older is open; returns once closed.

        Raises ``IgnoredOperation`` at once if ``(term, False)`` is not later
        than the expected state. A failed open of ``term`` counts as removed.
        After waiting, raises ``UnmatchedChannelTerm`` if a newer term
        overtook this one and ``WALClosed`` if the lifetime closed first.
        Cancelling the caller only stops the wait.
        """
        target = WALState(term, False)
        state = await self._request(target)
        if state.before(target):
            raise WALClosed(f"wal lifetime of {self.pchannel} closed while removing term {term}")
        if state.term > term:
            raise UnmatchedChannelTerm(f"remove {self.pchannel} at term {term}: overtaken by term {state.term}")

    async def _request(self, target: WALState) -> WALState:
        """Move expected to ``target`` and wait until current is no longer before it."""
        if self._closing:
            raise WALClosed(f"wal lifetime of {self.pchannel} is closed")
        # Check and set with no await in between, so the request registers atomically: a caller
        # cancelled from here on has still made its request.
        if not self._expected.value.before(target):
            raise IgnoredOperation(
                f"{self.pchannel}: {target} is not later than the expected state {self._expected.value}"
            )
        self._expected.value = target
        # Must finish even if the caller is cancelled: the worker would otherwise miss the wake-up.
        await asyncio.shield(self._wake_worker())
        async with self._current.changed:
            await self._current.changed.wait_for(lambda: self._closed or not self._current.value.before(target))
            return self._current.value

    async def _wake_worker(self) -> None:
        async with self._expected.changed:
            self._expected.changed.notify_all()

    def _error_of_failed_open(self, term: int, reason: str) -> StrataError:
        cause = self._open_error[1] if self._open_error and self._open_error[0] == term else None
        code = cause.code if isinstance(cause, StrataError) else ErrorCode.UNEXPECTED
        err = error_from_code(int(code), f"open {self.pchannel} at term {term} failed: {reason}")
        err.__cause__ = cause
        return err

    def available_wal(self, term: int) -> WAL:
        """The open WAL, if it is at exactly ``term``; never blocks.

        Raises ``ChannelNotExist`` if no WAL is open, ``UnmatchedChannelTerm``
        if the open one has another term.
        """
        wal = self._wal
        if wal is None or not self._current.value.available:
            raise ChannelNotExist(f"pchannel {self.pchannel} is not open on this node")
        if wal.term != term:
            raise UnmatchedChannelTerm(f"pchannel {self.pchannel} is at term {wal.term}, request has term {term}")
        return wal

    async def close(self) -> None:
        """Stop taking steps, finish the one in flight, close the WAL, stop the worker.

        New ``open``/``remove`` calls fail with ``WALClosed``; waiting ones are
        answered ``WALClosed`` unless their step already completed.
        Idempotent. If the caller is cancelled, the worker still finishes.
        """
        self._closing = True
        async with self._expected.changed:
            self._expected.changed.notify_all()
        # Shielded: the worker owns the WAL and must close it even if this caller leaves.
        await asyncio.shield(self._worker)
        await self._tasks.stop()

    # --- the worker -----------------------------------------------------------------------------

    async def _run(self) -> None:
        try:
            while True:
                async with self._expected.changed:
                    await self._expected.changed.wait_for(lambda: self._closing or self._pending() is not Step.WAIT)
                    if self._closing:
                        return
                    expected = self._expected.value
                try:
                    await self._apply(self._pending(), expected)
                except Exception:  # task boundary: log, pause, re-derive the step from the states
                    self._log.exception("wal lifetime step failed")
                    await asyncio.sleep(_RETRY_DELAY)
        finally:
            # Runs on close() and also if the task itself is cancelled (event-loop shutdown).
            await self._shutdown()

    def _pending(self) -> Step:
        return next_step(self._current.value, self._expected.value, wal_open=self._wal is not None)

    async def _apply(self, step: Step, expected: WALState) -> None:
        match step:
            case Step.WAIT:
                return
            case Step.CLOSE:
                await self._close_wal()
            case Step.MARK_REMOVED:
                await self._publish(WALState(expected.term, False))
                self._log.info("wal removed", term=expected.term)
            case Step.OPEN:
                await self._open_wal(expected.term)
            case _:
                assert_never(step)

    async def _open_wal(self, term: int) -> None:
        try:
            wal = await self._factory(self.pchannel, term)
        except Exception as err:
            self._log.warning("wal open failed", term=term, error=str(err))
            self._open_error = (term, err)
            await self._publish(WALState(term, False, str(err) or type(err).__name__))
            return
        if self._on_open is not None:
            try:
                await self._on_open(wal)
            except Exception as err:
                self._log.warning("wal open hook failed", term=term, error=str(err))
                with contextlib.suppress(Exception):
                    await wal.close()
                self._open_error = (term, err)
                await self._publish(WALState(term, False, str(err) or type(err).__name__))
                return
        self._wal = wal
        self._open_error = None
        await self._publish(WALState(term, True))
        self._log.info("wal opened", term=term)

    async def _close_wal(self) -> None:
        wal = self._wal
        if wal is None:
            return
        term = self._current.value.term
        # The hook first: a flusher must stop reading from the WAL before it goes away.
        if self._on_close is not None:
            try:
                await self._on_close(wal)
            except Exception:  # a hook must not keep a WAL open
                self._log.exception("wal close hook failed", term=term)
        try:
            await wal.close()
        except Exception:  # the WAL is given up either way; the backend fences a stale owner
            self._log.exception("wal close failed", term=term)
        self._wal = None
        await self._publish(WALState(term, False))
        self._log.info("wal closed", term=term)

    async def _publish(self, state: WALState) -> None:
        current = self._current.value
        if state.before(current):
            raise AssertionError(f"{self.pchannel}: state {current} cannot move back to {state}")
        await self._current.publish(state)

    async def _shutdown(self) -> None:
        try:
            await self._close_wal()
        finally:
            self._closed = True
            async with self._current.changed:
                self._current.changed.notify_all()
            self._log.info("wal lifetime closed", state=str(self._current.value))
