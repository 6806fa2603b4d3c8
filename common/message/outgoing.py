"""A message on its way to a WAL: the envelope the WAL stamps and writes, and its typed form.

A producer in the WAL's own process hands the WAL both (``Outgoing.of``: it built the typed
message and encoded it once); a message that arrives as protobuf (``Produce``, or a caller of
``WAL.append``) is decoded once where it enters (``Outgoing.decoded``). The WAL's writer, its
interceptors and its observers read the typed form, so nothing on the write path decodes a
message again (with upb each read of ``Message.body`` copies it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from common.message.types import TypedMessage, decode
from protos.common_pb2 import Message


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message on its way to the log: the envelope and its typed form, which agree."""

    msg: Message
    typed: TypedMessage

    @classmethod
    def of(cls, typed: TypedMessage) -> Self:
        """A message built here: encoded once, never decoded."""
        return cls(typed.encode(), typed)

    @classmethod
    def decoded(cls, msg: Message) -> Self:
        """A message that arrived encoded; raises ``MalformedMessage`` if Strata cannot read it."""
        return cls(msg, decode(msg))
