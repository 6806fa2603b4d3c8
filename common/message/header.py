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

_MISSING = object()


class HeaderReader:
    """The fields of one message's JSON header; every getter raises ``MalformedMessage``."""

    __slots__ = ("_doc", "_what")

    def __init__(self, raw: bytes, what: str) -> None:
        self._what = what
        if not raw:
            self._doc: dict[str, Any] = {}
            return
        try:
            doc = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise MalformedMessage(f"{what}: header is not JSON ({err})") from err
        if not isinstance(doc, dict):
            raise MalformedMessage(f"{what}: header is a JSON {type(doc).__name__}, not an object")
        self._doc = doc

    def fail(self, problem: str) -> MalformedMessage:
        """The error for a header whose ``problem`` the caller found itself."""
        return MalformedMessage(f"{self._what}: {problem}")

    def _get(self, key: str, default: object) -> object:
        value = self._doc.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise self.fail(f"header key {key!r} is missing")
            return default
        return value

    def integer(self, key: str, default: int | None = None) -> int:
        """``key`` as an integer; ``default`` when absent (required when ``default`` is None)."""
        value = self._get(key, _MISSING if default is None else default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(f"header key {key!r} is {value!r}, not an integer")
        return value

    def optional_integer(self, key: str) -> int | None:
        """``key`` as an integer, or None when absent."""
        if key not in self._doc:
            return None
        return self.integer(key)

    def string(self, key: str) -> str:
        """``key`` as a string (required)."""
        value = self._get(key, _MISSING)
        if not isinstance(value, str):
            raise self.fail(f"header key {key!r} is {value!r}, not a string")
        return value

    def integers(self, key: str) -> tuple[int, ...]:
        """``key`` as a list of integers; () when absent."""
        value = self._get(key, [])
        if not isinstance(value, list) or any(not isinstance(v, int) or isinstance(v, bool) for v in value):
            raise self.fail(f"header key {key!r} is {value!r}, not a list of integers")
        return tuple(value)


def dump_header(doc: dict[str, Any]) -> bytes:
    """A header as stored: ``json.dumps`` with its default separators, keys in the given order."""
    return json.dumps(doc).encode()
