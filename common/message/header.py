"""The JSON edge of a WAL message header: reading one field at a time, with its type checked.

Only ``common.message.types`` uses this. A header is a JSON object; a reader
names the message it decodes, so that every failure says which message and
which key was wrong. Keys the reader does not ask for are ignored (a newer
writer may add some).
"""

from __future__ import annotations

import json
from typing import Any

from common.errors import MalformedMessage


class HeaderReader:
    """The fields of one message's JSON header; every getter raises ``MalformedMessage``."""

    __slots__ = ("_doc", "_kind", "_vchannel")

    def __init__(self, raw: bytes, kind: str, vchannel: str) -> None:
        self._kind, self._vchannel = kind, vchannel
        if not raw:
            self._doc: dict[str, Any] = {}
            return
        try:
            doc = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise self.fail(f"header is not JSON ({err})") from err
        if not isinstance(doc, dict):
            raise self.fail(f"header is a JSON {type(doc).__name__}, not an object")
        self._doc = doc

    def fail(self, problem: str) -> MalformedMessage:
        """The error for a header whose ``problem`` the caller found itself."""
        return MalformedMessage(f"{self._kind} message on vchannel {self._vchannel!r}: {problem}")

    def _wrong(self, key: str, value: object, kind: str) -> MalformedMessage:
        if key not in self._doc:
            return self.fail(f"header key {key!r} is missing")
        return self.fail(f"header key {key!r} is {value!r}, not {kind}")

    def integer(self, key: str, default: int | None = None) -> int:
        """``key`` as an integer; ``default`` when absent (required when ``default`` is None)."""
        value = self._doc.get(key, default)
        if type(value) is not int:  # bool is an int subclass, and no integer
            raise self._wrong(key, value, "an integer")
        return value

    def optional_integer(self, key: str) -> int | None:
        """``key`` as an integer, or None when absent."""
        return self.integer(key) if key in self._doc else None

    def string(self, key: str) -> str:
        """``key`` as a string (required)."""
        value = self._doc.get(key)
        if type(value) is not str:
            raise self._wrong(key, value, "a string")
        return value

    def integers(self, key: str) -> tuple[int, ...]:
        """``key`` as a list of integers; () when absent."""
        value = self._doc.get(key, [])
        if type(value) is not list or any(type(v) is not int for v in value):
            raise self._wrong(key, value, "a list of integers")
        return tuple(value)


def dump_header(doc: dict[str, Any]) -> bytes:
    """A header as stored: ``json.dumps`` with its default separators, keys in the given order."""
    return json.dumps(doc).encode()
