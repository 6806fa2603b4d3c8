"""Segment files of one channel directory: naming, listing, tail recovery.

A channel directory holds append-only segment files named after the
sequence number of their first record and the term of the owner that wrote
them (``00000000000000000001-0000000007.log``), so the files sort in log
order and a record is found by a bisect on names.

Terms decide which files count. A file is *superseded* when a file of a
newer term starts at or before its first seq: a new owner always starts its
own file at the seq after the last record it recovered, so whatever an old
owner, fenced but still running, writes after the take-over lands either
past that seq in an old file (readers move on to the next file at its first
seq and never read there) or in a new file of its old term (superseded).
:func:`scan_segments` returns the live chain and the superseded files.
Blocking file I/O; callers run these functions in a thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from common.errors import StrataError

from .record import Decoded, decode_at, find_valid_record_after

SEGMENT_SUFFIX = ".log"
_SEQ_DIGITS = 20
_TERM_DIGITS = 10


def corruption(detail: str) -> StrataError:
    """Damage the WAL cannot repair on its own (not a torn tail).

    A plain ``StrataError`` with the ``UNEXPECTED`` code (no subclass, so that
    ``error_from_code`` keeps rebuilding plain errors for that code): no
    caller can retry its way out, an operator must look at the files.
    """
    return StrataError(f"wal corrupted: {detail}")


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment file; ``first_seq`` is the seq of its first record, ``term`` its writer's term."""

    first_seq: int
    term: int
    path: Path


@dataclass(frozen=True, slots=True)
class TailState:
    """What recovery found in the last segment."""

    size: int  # bytes of valid records, the file's length after repair
    next_seq: int  # the seq the next record must carry
    torn_bytes: int  # bytes cut off the end


def segment_path(directory: Path, first_seq: int, term: int) -> Path:
    return directory / f"{first_seq:0{_SEQ_DIGITS}d}-{term:0{_TERM_DIGITS}d}{SEGMENT_SUFFIX}"


def _parse(path: Path) -> Segment | None:
    if not path.name.endswith(SEGMENT_SUFFIX):
        return None
    seq, sep, term = path.name.removesuffix(SEGMENT_SUFFIX).partition("-")
    if not sep or len(seq) != _SEQ_DIGITS or len(term) != _TERM_DIGITS or not (seq.isdigit() and term.isdigit()):
        return None
    return Segment(first_seq=int(seq), term=int(term), path=path)


def scan_segments(directory: Path) -> tuple[list[Segment], list[Segment]]:
    """``(live, superseded)``: the live chain in log order, and the files a newer term hides."""
    found = [seg for seg in map(_parse, directory.iterdir()) if seg is not None]
    # By first seq, newest term first: a file is live if no file seen before it has a newer term.
    found.sort(key=lambda seg: (seg.first_seq, -seg.term))
    live: list[Segment] = []
    superseded: list[Segment] = []
    newest = -1
    for seg in found:
        if seg.term < newest or (live and live[-1].first_seq == seg.first_seq):
            superseded.append(seg)
        else:
            live.append(seg)
            newest = seg.term
    return live, superseded


def list_segments(directory: Path) -> list[Segment]:
    """The live segment files of ``directory`` in log order; other files are ignored."""
    return scan_segments(directory)[0]


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
