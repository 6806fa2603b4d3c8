"""The WAL backend interface every implementation (``local``, ``nats``) provides.

A backend stores an ordered log of opaque payloads per physical channel
(pchannel). The streaming node owns a channel for a *term*; a backend must
refuse an owner whose term is older than the newest one it has seen, and a
second concurrent owner (fencing). Payloads are opaque bytes: the streaming
node stores serialized protobuf messages, the backend never looks inside.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from common.errors import InvalidArgument

_ID = struct.Struct(">Q")


@dataclass(frozen=True, slots=True, order=True)
class MessageID:
    """A backend-neutral, totally ordered position in one channel's log.

    Every backend maps its native position onto an unsigned 64-bit sequence
    number that only grows within a channel: for ``local`` it is the record's
    sequence number (1, 2, 3, ...), for ``nats`` the record's number among the
    channel's records (1, 2, 3, ...; a JetStream message holds a group commit's
    records, numbered by a header). Ids of different channels are not comparable.
    """

    seq: int

    def __post_init__(self) -> None:
        if not 0 < self.seq < 1 << 64:
            raise InvalidArgument(f"message id out of range: {self.seq}")

    def to_bytes(self) -> bytes:
        """Encode as 8 big-endian bytes (so byte order equals id order)."""
        return _ID.pack(self.seq)

    @staticmethod
    def from_bytes(b: bytes) -> MessageID:
        """Decode what :meth:`to_bytes` produced."""
        if len(b) != _ID.size:
            raise InvalidArgument(f"message id must be {_ID.size} bytes, got {len(b)}")
        return MessageID(_ID.unpack(b)[0])

    def __str__(self) -> str:
        return str(self.seq)


class DeliverPolicyKind(Enum):
    ALL = "all"
    LATEST = "latest"
    START_FROM = "start_from"
    START_AFTER = "start_after"


@dataclass(frozen=True, slots=True)
class DeliverPolicy:
    """Where a :class:`Scanner` starts.

    * ``ALL``: the first record still in the log.
    * ``LATEST``: only records appended after :meth:`WALImpl.read` is called.
    * ``START_FROM(id)``: ``id`` itself (inclusive).
    * ``START_AFTER(id)``: the record after ``id`` (exclusive).

    If the start position has been truncated away the scanner starts at the
    first remaining record.
    """

    kind: DeliverPolicyKind
    message_id: MessageID | None = None

    def __post_init__(self) -> None:
        needs_id = self.kind in (DeliverPolicyKind.START_FROM, DeliverPolicyKind.START_AFTER)
        if needs_id != (self.message_id is not None):
            raise InvalidArgument(f"deliver policy {self.kind.value} with id {self.message_id}")

    @classmethod
    def all(cls) -> DeliverPolicy:
        return cls(DeliverPolicyKind.ALL)

    @classmethod
    def latest(cls) -> DeliverPolicy:
        return cls(DeliverPolicyKind.LATEST)

    @classmethod
    def start_from(cls, message_id: MessageID) -> DeliverPolicy:
        return cls(DeliverPolicyKind.START_FROM, message_id)

    @classmethod
    def start_after(cls, message_id: MessageID) -> DeliverPolicy:
        return cls(DeliverPolicyKind.START_AFTER, message_id)


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One record of the log as a scanner delivers it."""

    message_id: MessageID
    payload: bytes


class Scanner(Protocol):
    """An async iterator over a channel's records, in log order.

    It first delivers the stored records from its start position, then tails:
    it waits for new appends and delivers them as soon as they are durable.
    Iteration only stops when :meth:`close` is called or the WAL closes. A
    scanner is consumed by one task at a time.
    """

    def __aiter__(self) -> AsyncIterator[LogEntry]: ...

    async def close(self) -> None:
        """Stop the scanner: a pending or later ``__anext__`` ends iteration."""
        ...


class WALImpl(Protocol):
    """One channel's log, owned by one term until :meth:`close`."""

    channel: str
    term: int

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        """Append payloads and return their ids, in the order given.

        When it returns, the records are durable (fsync'd or replicated) and
        visible to scanners. Concurrent calls are group-committed; the log
        holds each call's payloads in order, and ids grow in log order.
        Raises ``WALClosed`` once :meth:`close` started. If the caller is
        cancelled the records may or may not end up in the log.
        """
        ...

    def read(self, policy: DeliverPolicy) -> Scanner:
        """Start a scanner at ``policy``; it does not block."""
        ...

    async def truncate(self, message_id: MessageID) -> None:
        """Allow the backend to drop records strictly below ``message_id``.

        A backend may keep some of them (``local`` deletes whole segment files
        only), but never drops ``message_id`` or anything after it.
        """
        ...

    def last_message_id(self) -> MessageID | None:
        """The id of the newest durable record, or ``None`` if none was ever appended."""
        ...

    def first_message_id(self) -> MessageID | None:
        """The id of the oldest record still in the log (truncation moves it), or ``None`` if empty.

        A reader asking to start below it would miss records: the WAL refuses such a start.
        """
        ...

    async def close(self) -> None:
        """Fail new appends with ``WALClosed``, let in-flight ones finish, end
        every scanner, and give up ownership. Idempotent."""
        ...


class WALOpener(Protocol):
    """Opens channels of one backend; built by ``registry.build_opener``."""

    async def open(self, channel: str, term: int) -> WALImpl:
        """Take ownership of ``channel`` for ``term`` and recover its log.

        Raises ``ChannelFenced`` when another owner holds the channel or a
        newer term already owned it.
        """
        ...

    async def close(self) -> None:
        """Close every WAL this opener opened that is still open."""
        ...
