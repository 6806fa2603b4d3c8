"""The ``Accept-Type-Allow-Int64`` header: Int64 values as JSON numbers, or as strings.

JavaScript reads a JSON number as a double, which loses an int64 past 2^53, so
Milvus lets a client ask for int64s as strings: with the header ``false``,
primary keys of ``insertIds`` / ``upsertIds``, search hits' ``id`` and Int64
fields of query, get and search answers are decimal strings; with ``true``
they are numbers. A missing header, or one Go's ``strconv.ParseBool`` does not
read, takes Milvus's default (``proxy.http.acceptTypeAllowInt64``: true).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymilvus.grpc_gen import schema_pb2

HEADER = "Accept-Type-Allow-Int64"
DEFAULT = True
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def allow_int64(header: str | None, default: bool = DEFAULT) -> bool:
    """Whether int64s are answered as numbers, as Milvus reads the header."""
    if header in _TRUE:
        return True
    if header in _FALSE:
        return False
    return default


def int64_fields(fields: Iterable[schema_pb2.FieldData]) -> set[str]:
    """The names of the Int64 fields of an answer's columns."""
    return {f.field_name for f in fields if f.type == schema_pb2.Int64}


def _text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def as_strings(rows: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    """``rows`` with the values of ``names`` as decimal strings (in place; returns them)."""
    if names:
        for row in rows:
            for name in names & row.keys():
                row[name] = _text(row[name])
    return rows


def ids(values: list[Any], allow: bool) -> list[Any]:
    """Primary keys of a mutation's answer: int ones as strings unless allowed as numbers."""
    return values if allow else [_text(v) for v in values]
