"""Segment files of one channel directory: naming, listing, tail recovery.

A channel directory holds append-only segment files named after the
sequence number of their first record (``00000000000000000001.log``), so
the files sort in log order and a record is found by a bisect on names.
Blocking file I/O; callers run these functions in a thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from services.errors import StrataError

from .record import Decoded, decode_at, find_valid_record_after

SEGMENT_SUFFIX = ".log"
_NAME_DIGITS = 20


def corruption(detail: str) -> StrataError:
    """Damage the WAL cannot repair on its own (not a torn tail).

    A plain ``StrataError`` with the ``UNEXPECTED`` code (no subclass, so that
    ``error_from_code`` keeps rebuilding plain errors for that code): no
    caller can retry its way out, an operator must look at the files.
    """
    return StrataError(f"wal corrupted: {detail}")


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment file; ``first_seq`` is the seq of its first record."""

    first_seq: int
    path: Path


@dataclass(frozen=True, slots=True)
class TailState:
    """What recovery found in the last segment."""

    size: int  # bytes of valid records, the file's length after repair
    next_seq: int  # the seq the next record must carry
    torn_bytes: int  # bytes cut off the end


def segment_path(directory: Path, first_seq: int) -> Path:
    return directory / f"{first_seq:0{_NAME_DIGITS}d}{SEGMENT_SUFFIX}"


def list_segments(directory: Path) -> list[Segment]:
    """Segment files of ``directory`` in log order; other files are ignored."""
    segments = []
    for path in directory.iterdir():
        stem = path.name.removesuffix(SEGMENT_SUFFIX)
        if path.name.endswith(SEGMENT_SUFFIX) and stem.isdigit() and len(stem) == _NAME_DIGITS:
            segments.append(Segment(first_seq=int(stem), path=path))
    segments.sort(key=lambda s: s.first_seq)
    return segments


def recover_tail(segment: Segment) -> TailState:
    """Validate the last segment and cut a torn tail off it.

    A record that is short or fails its CRC is a torn write when nothing
    valid follows it: the file is truncated to the last good record. If a
    valid record follows, the damage is in the middle of the log and
    a corruption error is raised instead of dropping data. A record
    whose CRC is right but whose seq is not the expected one is corruption
    too: a torn write cannot produce it.
    """
    data = segment.path.read_bytes()
    offset, seq = 0, segment.first_seq
    while offset < len(data):
        status, rec = decode_at(data, offset)
        if status is Decoded.OK and rec is not None:
            if rec.seq != seq:
                raise corruption(
                    f"{segment.path}: record at offset {offset} has seq {rec.seq}, expected {seq}"
                )
            offset += rec.size
            seq += 1
            continue
        later = find_valid_record_after(data, offset, seq)
        if later is not None:
            raise corruption(
                f"{segment.path}: {status.value} record at offset {offset} (seq {seq}) "
                f"followed by a valid record at offset {later}"
            )
        break
    torn = len(data) - offset
    if torn:
        with open(segment.path, "r+b") as f:
            f.truncate(offset)
            os.fsync(f.fileno())
    return TailState(size=offset, next_seq=seq, torn_bytes=torn)


def fsync_dir(directory: Path) -> None:
    """Make file creations and deletions in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
