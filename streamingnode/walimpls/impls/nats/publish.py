"""JetStream publishes that expect the stream's last sequence.

:class:`Publisher` sends one frame (``layout.py``) with
``Nats-Expected-Last-Sequence`` set to this owner's previous message, and a
``Nats-Msg-Id`` so that a retry can tell whether an earlier attempt landed.
The server stores the frame only if nobody else wrote since -- a newer
owner's term marker makes every later publish of the old owner fail: that is
the fence. A frame is one message, so the records of a group commit are
stored all together or not at all. The publisher only reports what happened;
the WAL decides (retry, reconcile, fenced).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass
from enum import Enum

import structlog
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.js.api import Header

from .natsutil import settled

# JetStream's error code for a failed Nats-Expected-Last-Sequence / -Subject-Sequence check.
WRONG_LAST_SEQUENCE = 10071


class PubStatus(Enum):
    STORED = "stored"
    # Another writer got ahead, or an earlier attempt of this frame landed (its ack was lost).
    WRONG_LAST_SEQUENCE = "wrong_last_sequence"
    UNAVAILABLE = "unavailable"  # no answer, no responders, 503, connection trouble: may or may not be stored
    REJECTED = "rejected"  # any other refusal: not stored


@dataclass(frozen=True, slots=True)
class PubResult:
    status: PubStatus
    seq: int = 0  # the stream sequence, when stored
    detail: str = ""


def parse_ack(msg: Msg) -> PubResult:
    """Turn a JetStream publish reply (an ack, an error or a status message) into a result."""
    headers = msg.headers or {}
    status = headers.get(Header.STATUS.value)
    if status:  # "503" no responders, or another status with no body
        return PubResult(PubStatus.UNAVAILABLE, detail=f"status {status} {headers.get(Header.DESCRIPTION.value, '')}")
    try:
        doc = json.loads(msg.data)
    except ValueError:
        return PubResult(PubStatus.REJECTED, detail=f"unreadable ack {msg.data[:100]!r}")
    error = doc.get("error")
    if error is not None:
        code, err_code = error.get("code"), error.get("err_code")
        detail = f"{code}/{err_code}: {error.get('description', '')}"
        if err_code == WRONG_LAST_SEQUENCE:
            return PubResult(PubStatus.WRONG_LAST_SEQUENCE, detail=detail)
        if code in (503, 504, 408):
            return PubResult(PubStatus.UNAVAILABLE, detail=detail)
        return PubResult(PubStatus.REJECTED, detail=detail)
    seq = doc.get("seq")
    if not isinstance(seq, int):
        return PubResult(PubStatus.REJECTED, detail=f"ack without a sequence: {doc}")
    return PubResult(PubStatus.STORED, seq=seq)


class Publisher:
    """Publishes the frames of one channel over one reply inbox; owned by its WAL until :meth:`close`."""

    def __init__(self, nc: NATS, subject: str, channel: str) -> None:
        self._nc = nc
        self._subject = subject
        self._prefix = nc.new_inbox() + "."
        self._sub: Subscription | None = None
        self._pending: dict[str, asyncio.Future[PubResult]] = {}
        self._attempts = itertools.count()
        self._log = structlog.get_logger().bind(component="wal-nats", pchannel=channel)

    async def start(self) -> None:
        self._sub = await settled(self._nc.subscribe(self._prefix + "*", cb=self._on_reply))

    async def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None and not self._nc.is_closed:
            try:
                await settled(sub.unsubscribe())
            except NatsError as err:  # the connection is going away: the server drops the interest too
                self._log.debug("publisher unsubscribe failed", error=str(err))
        for future in self._pending.values():
            if not future.done():
                future.set_result(PubResult(PubStatus.UNAVAILABLE, detail="publisher closed"))
        self._pending.clear()

    async def publish(self, body: bytes, headers: dict[str, str], expected_last: int, timeout: float) -> PubResult:
        """Publish one message right after stream sequence ``expected_last``; wait up to ``timeout`` for its ack.

        Without an ack the result is ``UNAVAILABLE`` (it may or may not be
        stored). Never raises for server or connection trouble.
        """
        token = str(next(self._attempts))
        future: asyncio.Future[PubResult] = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        headers = {**headers, Header.EXPECTED_LAST_SEQUENCE.value: str(expected_last)}
        try:
            try:
                await settled(self._nc.publish(self._subject, body, reply=self._prefix + token, headers=headers))
            except NatsError as err:  # closed, reconnect buffer full, ...
                return PubResult(PubStatus.UNAVAILABLE, detail=f"publish failed: {err!r}")
            try:
                async with asyncio.timeout(timeout):
                    return await future
            except TimeoutError:
                return PubResult(PubStatus.UNAVAILABLE, detail=f"no ack in {timeout}s")
        finally:
            self._pending.pop(token, None)

    async def _on_reply(self, msg: Msg) -> None:
        token = msg.subject[len(self._prefix) :]
        future = self._pending.get(token)
        if future is not None and not future.done():
            future.set_result(parse_ack(msg))
