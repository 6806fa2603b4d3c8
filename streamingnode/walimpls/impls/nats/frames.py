"""Where the records of one channel are: the frames' extent, and finding the frame of a record id.

Record ids are dense but frames hold several records and the stream holds
term markers and purged gaps too, so an id is not a stream sequence.
:class:`FrameIndex` keeps the first and the last frame of the log and the
frames this owner stored recently (a bounded list, enough for readers near
the tail, which is where the streaming node reads); an older id is found by a
binary search over the stream with ``next_by_subj`` message gets
(``log2(frames)`` requests, each about 0.1 ms on a LAN).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque

from nats.js.manager import JetStreamManager

from .layout import ChannelNames, Frame, frame_header
from .natsutil import settled

RECENT_FRAMES = 65536


class FrameIndex:
    """The first, the last and the recent frames of one channel's log; updated on the event loop only."""

    def __init__(self, *, first: Frame | None, last: Frame | None) -> None:
        self.first = first
        self.last = last
        self._recent: deque[Frame] = deque(maxlen=RECENT_FRAMES)
        if last is not None:
            self._recent.append(last)

    @property
    def last_id(self) -> int:
        return self.last.last_id if self.last is not None else 0

    def appended(self, frame: Frame) -> None:
        self.last = frame
        if self.first is None:
            self.first = frame
        self._recent.append(frame)

    def truncated(self, first: Frame) -> None:
        self.first = first
        while self._recent and self._recent[0].seq < first.seq:
            self._recent.popleft()

    def cached(self, message_id: int) -> Frame | None:
        """The frame holding ``message_id`` if it is a recent one (no I/O)."""
        if not self._recent or message_id < self._recent[0].first_id or message_id > self.last_id:
            return None
        i = bisect_right([f.first_id for f in self._recent], message_id) - 1
        return self._recent[i]

    async def locate(self, jsm: JetStreamManager, names: ChannelNames, message_id: int) -> Frame | None:
        """The first frame whose records reach ``message_id`` (the one holding it, or the first
        remaining one if it was truncated away); None if every record is below it."""
        if self.first is None or self.last is None or message_id > self.last_id:
            return None
        if message_id <= self.first.last_id:
            return self.first
        hit = self.cached(message_id)
        if hit is not None:
            return hit
        found = self.last
        lo, hi = self.first.seq, self.last.seq
        while lo <= hi:
            mid = (lo + hi) // 2
            msg = await settled(jsm.get_msg(names.stream, seq=mid, subject=names.data_subject, next=True))
            assert msg.seq is not None  # the last frame is at or after mid
            frame = frame_header(msg.headers, msg.seq, f"{names.stream} seq {msg.seq}")
            if frame.last_id >= message_id:
                found, hi = frame, mid - 1
            else:
                lo = frame.seq + 1
        return found
