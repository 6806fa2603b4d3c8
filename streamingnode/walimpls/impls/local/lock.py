"""Exclusive ownership of a channel directory, carried by a term.

The ``LOCK`` file of a channel directory is held with
``flock(LOCK_EX | LOCK_NB)`` for as long as a WAL is open and records the
owner's term. The kernel drops the lock when the owning process dies, so a
crash never leaves the channel locked; the term stays in the file, so a
later owner with an older term is still refused. Terms only grow:

    held by anyone              -> ChannelFenced (names the holding term)
    free, recorded 5, open 4    -> ChannelFenced (stale term)
    free, recorded 5, open 5/6  -> owned, file now says 5/6

Blocking calls; callers run them in a thread.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from services.errors import ChannelFenced

LOCK_NAME = "LOCK"


def _read_term(fd: int) -> int | None:
    raw = os.pread(fd, 64, 0).decode("ascii", errors="replace").strip()
    return int(raw) if raw.isdigit() else None


class ChannelLock:
    """A held channel lock; :meth:`release` gives it up."""

    def __init__(self, fd: int, path: Path, term: int) -> None:
        self._fd: int | None = fd
        self.path = path
        self.term = term
        self.previous_term: int | None = None

    @classmethod
    def acquire(cls, directory: Path, channel: str, term: int) -> ChannelLock:
        """Take the lock of ``directory`` for ``term`` or raise ``ChannelFenced``."""
        path = directory / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_term(fd)
                raise ChannelFenced(
                    f"channel {channel} is owned by term {holder}, cannot open with term {term}"
                ) from None
            recorded = _read_term(fd)
            if recorded is not None and term < recorded:
                raise ChannelFenced(
                    f"channel {channel} was owned by term {recorded}, term {term} is stale"
                )
            data = f"{term}\n".encode("ascii")
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # closing the descriptor also drops the flock
            raise
        lock = cls(fd, path, term)
        lock.previous_term = recorded
        return lock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give up ownership; the recorded term stays in the file. Idempotent."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
