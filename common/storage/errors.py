"""The storage layer's errors: an object that is missing, or one that cannot be decoded.

Both are ``StrataError``s (code ``UNEXPECTED``: a segment that its manifest promises
but storage cannot deliver is an internal failure), and both name the object.
"""

from __future__ import annotations

from common.errors import StrataError


class ObjectNotFound(StrataError):
    """An object that should exist does not; the message names it."""


class CorruptObject(StrataError):
    """An object exists but does not decode (bad magic, version, length or content)."""
