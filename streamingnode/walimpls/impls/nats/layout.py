"""Names, term markers and the record frame of the ``nats`` backend; no I/O.

One JetStream stream per channel, ``<prefix>_<channel>``, with two subjects:

* ``<prefix>.<channel>.data``: *frames*. A frame is one message holding the
  records of one group commit (or of a part of it that fits ``max_payload``),
  numbered by its ``Strata-First-Id`` header: record ids are dense, 1, 2, 3,
  ... over the whole log, whatever else the stream holds.
* ``<prefix>.<channel>.term``: one *term marker* per ``open`` (JSON: term and
  owner id). The newest marker names the owner of the channel.

``<prefix>.<channel>.owner.<term>`` is not a stream subject: the owner of
``term`` answers requests on it while its WAL is open (a liveness probe for an
opener of the same term).

A frame of one record carries the payload as it is; a frame of ``n > 1``
records (header ``Strata-Records: n``) carries ``n`` times
``| length u32 (big-endian) | payload |``.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.errors import InvalidArgument, StrataError

FIRST_ID = "Strata-First-Id"
RECORDS = "Strata-Records"
FRAME_OVERHEAD = 4  # bytes a record takes in a frame beside its payload
_LENGTH = struct.Struct(">I")
_TOKEN = re.compile(r"^[A-Za-z0-9_-]+$")
MAX_CHANNEL_LENGTH = 160  # stream names become file names on the server
MAX_PREFIX_LENGTH = 64


def check_token(what: str, value: str, max_length: int) -> None:
    """Refuse names that are not one subject token usable in a stream name."""
    if not isinstance(value, str) or not _TOKEN.match(value) or len(value) > max_length:
        raise InvalidArgument(f"invalid {what} {value!r}: use 1 to {max_length} letters, digits, '_' or '-'")


@dataclass(frozen=True, slots=True)
class ChannelNames:
    """Where one channel lives in JetStream."""

    stream: str
    data_subject: str
    term_subject: str
    owner_prefix: str

    @classmethod
    def of(cls, prefix: str, channel: str) -> ChannelNames:
        check_token("stream prefix", prefix, MAX_PREFIX_LENGTH)
        check_token("channel name", channel, MAX_CHANNEL_LENGTH)
        base = f"{prefix}.{channel}"
        return cls(
            stream=f"{prefix}_{channel}",
            data_subject=f"{base}.data",
            term_subject=f"{base}.term",
            owner_prefix=f"{base}.owner",
        )

    def owner_subject(self, term: int) -> str:
        return f"{self.owner_prefix}.{term}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TermMarker:
    """The record an owner writes to the term subject when it opens the channel.

    ``owner`` is unique per ``open``: two opens of one term differ.
    """

    term: int
    owner: str

    def encode(self) -> bytes:
        return json.dumps({"term": self.term, "owner": self.owner}).encode()

    @staticmethod
    def decode(data: bytes | None, where: str) -> TermMarker:
        try:
            doc = json.loads(data or b"")
            marker = TermMarker(term=int(doc["term"]), owner=str(doc["owner"]))
        except (ValueError, KeyError, TypeError) as err:
            raise StrataError(f"wal corrupted: bad term marker at {where}") from err
        if marker.term < 0 or not marker.owner:
            raise StrataError(f"wal corrupted: bad term marker at {where}")
        return marker


def encode_frame(payloads: Sequence[bytes]) -> bytes:
    """The body of a frame holding ``payloads`` (at least one)."""
    if len(payloads) == 1:
        return bytes(payloads[0])
    return b"".join(_LENGTH.pack(len(p)) + p for p in payloads)


def frame_size(sizes: Sequence[int]) -> int:
    """Bytes of the frame body for payloads of these sizes."""
    return sizes[0] if len(sizes) == 1 else sum(sizes) + FRAME_OVERHEAD * len(sizes)


@dataclass(frozen=True, slots=True)
class Frame:
    """A data message as read back: its stream sequence, its first record id, its records."""

    seq: int
    first_id: int
    count: int

    @property
    def last_id(self) -> int:
        return self.first_id + self.count - 1


def frame_header(headers: Mapping[str, str] | None, seq: int, where: str) -> Frame:
    """The numbering of a data message from its headers."""
    try:
        first = int((headers or {})[FIRST_ID])
        count = int((headers or {}).get(RECORDS, "1"))
    except (KeyError, ValueError) as err:
        raise StrataError(f"wal corrupted: data message without a valid {FIRST_ID} at {where}") from err
    if first < 1 or count < 1:
        raise StrataError(f"wal corrupted: data message numbered {first} (+{count}) at {where}")
    return Frame(seq, first, count)


def decode_frame(body: bytes, count: int, where: str) -> list[bytes]:
    """The payloads of a frame body of ``count`` records."""
    if count == 1:
        return [body]
    out: list[bytes] = []
    view = memoryview(body)
    pos = 0
    for _ in range(count):
        if pos + FRAME_OVERHEAD > len(view):
            raise StrataError(f"wal corrupted: frame at {where} ends inside record {len(out) + 1} of {count}")
        (length,) = _LENGTH.unpack_from(view, pos)
        pos += FRAME_OVERHEAD
        if pos + length > len(view):
            raise StrataError(f"wal corrupted: frame at {where} ends inside record {len(out) + 1} of {count}")
        out.append(bytes(view[pos : pos + length]))
        pos += length
    if pos != len(view):
        raise StrataError(f"wal corrupted: frame at {where} has {len(view) - pos} bytes after {count} records")
    return out
