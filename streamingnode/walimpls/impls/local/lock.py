"""Channel ownership by term, and fencing of an owner that lost the channel.

Two files in a channel directory:

* ``LOCK`` records the newest term that ever opened the channel. Its owner
  also holds ``flock(LOCK_EX)`` on it for as long as its WAL is open: a hint
  that someone may still write. The kernel drops the flock when the owner
  dies, so a crash never leaves the channel locked.
* ``OPENING`` is flocked only while an owner opens (reads and writes the
  term, recovers the tail, starts its file), so two openers never interleave.

Rules for ``open(term)``, the term recorded in ``LOCK`` being ``recorded``:

    term < recorded                         -> ChannelFenced (stale term)
    flock held elsewhere, term <= recorded  -> ChannelFenced (owned by that term)
    flock held elsewhere, term >  recorded  -> take over: the old owner is fenced
    flock free, term >= recorded            -> owned

A take-over is what a failover needs when the old owner is frozen rather
than dead (SIGSTOP, a long GC pause, a partition from etcd): it keeps its
flock and descriptors, but it no longer owns the channel. It is fenced by the
storage, not by its good will: after every fsync, before it acknowledges or
publishes a batch, the writer reads ``LOCK`` again (:meth:`ChannelLock.fenced_by`)
and fails the batch if a newer term is recorded; and the new owner writes
only to files named with its own term, which hide the old owner's files
(``segment.py``), so whatever the old owner writes later is never read.
Blocking calls; callers run them in a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from common.errors import ChannelFenced

LOCK_NAME = "LOCK"
OPENING_NAME = "OPENING"
_OPENING_WAIT_SECONDS = 10.0


def _read_term(fd: int) -> int | None:
    raw = os.pread(fd, 64, 0).decode("ascii", errors="replace").strip()
    return int(raw) if raw.isdigit() else None


@contextlib.contextmanager
def opening(directory: Path, channel: str) -> Iterator[None]:
    """Hold the directory's open guard; waits for another opener, at most ~10 s."""
    fd = os.open(directory / OPENING_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + _OPENING_WAIT_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ChannelFenced(f"channel {channel} is being opened by another owner") from None
                time.sleep(0.01)
        yield
    finally:
        os.close(fd)  # drops the flock


class ChannelLock:
    """Ownership of a channel for one term; :meth:`release` gives it up."""

    def __init__(self, fd: int, path: Path, channel: str, term: int, *, holds_flock: bool) -> None:
        self._fd: int | None = fd
        self.path = path
        self.channel = channel
        self.term = term
        self.holds_flock = holds_flock
        self.previous_term: int | None = None

    @classmethod
    def acquire(cls, directory: Path, channel: str, term: int) -> ChannelLock:
        """Take the channel for ``term`` (see the module rules) or raise ``ChannelFenced``.

        Call it inside :func:`opening`.
        """
        path = directory / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                holds_flock = True
            except BlockingIOError:
                holds_flock = False
            recorded = _read_term(fd)
            if recorded is not None and term < recorded:
                raise ChannelFenced(f"channel {channel} was owned by term {recorded}, term {term} is stale")
            if not holds_flock and (recorded is None or term <= recorded):
                raise ChannelFenced(f"channel {channel} is owned by term {recorded}, cannot open with term {term}")
            data = f"{term}\n".encode("ascii")
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # closing the descriptor also drops the flock
            raise
        lock = cls(fd, path, channel, term, holds_flock=holds_flock)
        lock.previous_term = recorded
        return lock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def fenced_by(self) -> int | None:
        """The newer term that took the channel over, or None while this term still owns it."""
        if self._fd is None:
            return None
        recorded = _read_term(self._fd)
        return recorded if recorded is not None and recorded > self.term else None

    def check(self) -> None:
        """Raise ``ChannelFenced`` if a newer term took the channel over."""
        newer = self.fenced_by()
        if newer is not None:
            raise ChannelFenced(f"channel {self.channel} was taken over by term {newer}; term {self.term} is fenced")

    def release(self) -> None:
        """Give up ownership; the recorded term stays in the file. Idempotent."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self.holds_flock:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
