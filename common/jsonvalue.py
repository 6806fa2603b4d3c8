"""JSON values from clients, decoded with a bound on their nesting depth.

Python's ``json`` module recurses once per level of nesting, in the decoder
and the encoder alike, and so does every walk over a decoded value (the filter
evaluator's comparisons, ``json.dumps`` of query results). A document nested
thousands of levels deep would raise ``RecursionError`` in whichever of these
meets it first. Values from clients (JSON field data, JSON default values,
JSON filter parameters, bulk-import rows) therefore go through
:func:`load_json`, which refuses a document nested deeper than
``MAX_JSON_DEPTH`` before decoding it; anything stored is then safe to decode
and walk anywhere.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

#: The deepest nesting of arrays and objects a JSON value may have: a scalar
#: is 0 levels, `[]` 1, `{"a": [1]}` 2. Milvus' query nodes parse JSON with
#: simdjson, whose default bound is 1024; this one keeps every recursive step
#: here far inside Python's recursion limit (about 1000 frames).
MAX_JSON_DEPTH = 256

# A complete JSON string literal, escapes included ("unrolled" so that the
# regex engine matches it in linear time).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = np.frombuffer(b"[{", dtype=np.uint8)
_CLOSE = np.frombuffer(b"]}", dtype=np.uint8)


class JsonTooDeep(ValueError):
    """A JSON document nests arrays and objects deeper than ``MAX_JSON_DEPTH``."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON value is nested more than {limit} levels deep")
        self.limit = limit


def nesting_depth(text: str | bytes) -> int:
    """How deeply ``text`` nests arrays and objects, brackets inside strings not counted.

    For text that is not valid JSON this is never less than the depth the
    decoder would reach before finding the error. Linear time, vectorised.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if data.count(b"[") + data.count(b"{") == 0:
        return 0
    codes = np.frombuffer(_STRING.sub(b'""', data), dtype=np.uint8)
    steps = np.isin(codes, _OPEN).astype(np.int32) - np.isin(codes, _CLOSE).astype(np.int32)
    return int(np.cumsum(steps).max(initial=0))


def check_depth(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JsonTooDeep` if ``text`` nests deeper than ``limit``.

    Cheap for the common case: text with at most ``limit`` opening brackets
    cannot be deeper and is not scanned.
    """
    if isinstance(text, str):
        opening = text.count("[") + text.count("{")
    else:
        opening = text.count(b"[") + text.count(b"{")
    if opening <= limit:
        return
    if nesting_depth(text) > limit:
        raise JsonTooDeep(limit)


def load_json(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads(text)``, refusing documents nested deeper than ``limit``.

    Raises:
        JsonTooDeep: The document nests deeper than ``limit`` (checked before decoding).
        ValueError: The text is not valid JSON (``json.JSONDecodeError``, or
            ``UnicodeDecodeError`` for bytes that are not UTF-8).
    """
    check_depth(text, limit)
    try:
        return json.loads(text)
    except RecursionError:  # only a caller already deep in its own stack gets here
        raise JsonTooDeep(limit) from None
