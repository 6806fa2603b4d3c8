"""The on-disk record of the ``local`` WAL: encoding, decoding, validation.

A record is a 16-byte header followed by the payload; all integers are
little-endian::

    +----------------+----------------+------------------------+-----------+
    | length: u32    | crc: u32       | seq: u64               | payload   |
    +----------------+----------------+------------------------+-----------+

``crc`` is CRC32C over ``length | seq | payload`` (the header without the
crc field, then the payload), so a record copied to another position, a
torn header and a torn payload are all detected. No I/O here.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

import crc32c
import numpy as np

HEADER = struct.Struct("<IIQ")
HEADER_SIZE = HEADER.size
_CRC_PREFIX = struct.Struct("<IQ")
MAX_PAYLOAD = (1 << 32) - 1


def record_crc(seq: int, payload: bytes | memoryview) -> int:
    prefix: int = crc32c.crc32c(_CRC_PREFIX.pack(len(payload), seq))
    crc: int = crc32c.crc32c(payload, prefix)
    return crc


def encode(seq: int, payload: bytes) -> bytes:
    """The bytes of one record."""
    return HEADER.pack(len(payload), record_crc(seq, payload), seq) + payload


class Decoded(Enum):
    OK = "ok"
    SHORT = "short"  # fewer bytes left than the header or the payload needs
    BAD_CRC = "bad_crc"


@dataclass(frozen=True, slots=True)
class RecordView:
    """A decoded record inside a buffer; ``payload`` is a view, copy to keep."""

    seq: int
    payload: memoryview
    size: int  # header + payload


def decode_at(buf: bytes | memoryview, offset: int) -> tuple[Decoded, RecordView | None]:
    """Decode the record starting at ``offset`` of ``buf``."""
    view = memoryview(buf)
    if len(view) - offset < HEADER_SIZE:
        return Decoded.SHORT, None
    length, crc, seq = HEADER.unpack_from(view, offset)
    end = offset + HEADER_SIZE + length
    if end > len(view):
        return Decoded.SHORT, None
    payload = view[offset + HEADER_SIZE : end]
    if record_crc(seq, payload) != crc:
        return Decoded.BAD_CRC, None
    return Decoded.OK, RecordView(seq=seq, payload=payload, size=HEADER_SIZE + length)


def find_valid_record_after(buf: bytes, offset: int, min_seq: int) -> int | None:
    """Offset of a valid record with ``seq >= min_seq`` starting after ``offset``.

    Used on recovery to tell a torn tail (garbage up to the end) from damage
    in the middle (valid records after the bad one). Every byte position is a
    candidate; the seq field is matched with numpy first so that only a few
    candidates pay for a CRC.
    """
    start = offset + 1
    seq_hi = min_seq + (len(buf) - start) // HEADER_SIZE
    candidates: list[int] = []
    for align in range(8):
        seq_at = start + align + 8  # where the seq field of a record at start+align lies
        count = (len(buf) - seq_at) // 8
        if count <= 0:
            continue
        seqs = np.frombuffer(buf, dtype="<u8", count=count, offset=seq_at)
        hits = np.flatnonzero((seqs >= min_seq) & (seqs <= seq_hi))
        candidates.extend(int(start + align + 8 * k) for k in hits)
    for pos in sorted(candidates):
        status, rec = decode_at(buf, pos)
        if status is Decoded.OK and rec is not None:
            return pos
    return None
