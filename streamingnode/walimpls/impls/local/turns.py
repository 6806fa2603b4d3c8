"""Group commit without a writer task: the callers of ``append`` take turns leading a commit.

A caller queues its :class:`Request` with :meth:`Turns.enter`. If no commit is running, it
leads at once; otherwise it waits, and is woken either because the leader answered its
request (it returns the answer) or because the lead was handed to it (its request is still
queued: it takes every queued request and commits them as the next batch). A leader's
:meth:`Turns.leave` wakes every caller it answered and, once they have run, hands the lead
to the first caller waiting, so the next batch starts one loop step after the previous one
is answered. No task is created: every commit runs in a caller's task. A caller alone
(no commit running, as for the WAL's single writer) leads at once, without any hand-off.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ...wal import MessageID


@dataclass(eq=False, slots=True)
class Request:
    """One ``append`` call's batch and, once a leader committed it, its answer."""

    payloads: list[bytes]
    ids: list[MessageID] | None = None
    error: BaseException | None = None
    wake: asyncio.Future[None] | None = None  # set while its caller waits behind a leader

    @property
    def answered(self) -> bool:
        return self.ids is not None or self.error is not None


class Turns:
    """The queued requests and whether a caller leads (or was handed) the next commit."""

    def __init__(self) -> None:
        self._queue: list[Request] = []
        self._leading = False
        self._idle = asyncio.Event()
        self._idle.set()

    async def enter(self, request: Request) -> bool:
        """Queue ``request``: True when its caller leads now (``take``, commit, ``leave``),
        False when a leader answered it.

        A caller cancelled while it waits leaves the queue (nothing of its request is
        written, unless a leader already took it) and hands on the lead if it had just
        been given it.
        """
        self._queue.append(request)
        if not self._leading:
            self._lead()
            return True
        request.wake = asyncio.get_running_loop().create_future()
        try:
            await request.wake
        except asyncio.CancelledError:
            self._abandon(request)
            raise
        return not request.answered

    def take(self) -> list[Request]:
        """Every queued request: the leader's batch."""
        batch, self._queue = self._queue, []
        return batch

    def leave(self, batch: list[Request]) -> None:
        """Wake the callers of ``batch`` (answered by now) and hand the lead on, or go idle.

        If it woke any, the lead passes one loop step later: callers that append again as
        soon as they have their answer then join the next batch instead of one of them
        committing alone.
        """
        woke = False
        for request in batch:
            if request.wake is not None and not request.wake.done():
                request.wake.set_result(None)
                woke = True
        if woke:
            asyncio.get_running_loop().call_soon(self._hand_on)  # after the woken callers' steps
        else:
            self._hand_on()

    def _hand_on(self) -> None:
        for request in self._queue:
            if request.wake is not None and not request.wake.done():
                request.wake.set_result(None)  # not answered: its caller leads next
                return
        self._leading = False
        self._idle.set()

    async def hold(self) -> list[Request]:
        """Wait until no commit runs or waits, then lead for good (for ``close``).

        Returns what is still queued: requests whose callers were cancelled and have
        not left yet.
        """
        while self._leading:
            await self._idle.wait()
        self._lead()
        return self.take()

    def _lead(self) -> None:
        self._leading = True
        self._idle.clear()

    def _abandon(self, request: Request) -> None:
        if request not in self._queue:
            return  # a leader took it: it may be written, and it is answered to nobody
        self._queue.remove(request)
        assert request.wake is not None
        if not request.wake.cancelled():  # it was handed the lead: pass it on
            self._hand_on()
