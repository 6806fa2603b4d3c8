"""A bound filter expression as bytes, for a read crossing a gRPC edge (``common/readplan_pb.py``).

The proxy parses and binds a read's filter once; the query nodes it calls over
gRPC get the bound tree, not the text, so they neither parse it again nor need
the proxy's schema to bind it the same way. The encoding is JSON: a node is an
object ``{"$n": class name, field: value, ...}`` with its ``init`` fields, an
enum ``{"$e": enum name, "v": value}``, a tuple a list; constants are JSON
scalars. Only the node and enum classes of ``ast.py`` are decoded (no pickle:
nothing but these frozen dataclasses can come out), and a node gets its fields
through its constructor, so the decoded tree is equal to the encoded one.
"""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from typing import Any

from common.errors import InvalidArgument
from common.expr.ast import EXPR_TYPES, OPERAND_TYPES, ArithOp, CompareOp, ContainsMode, Expr, ValueKind
from common.schema import DataType

_NODES: dict[str, type] = {t.__name__: t for t in (*EXPR_TYPES, *OPERAND_TYPES)}
_ENUMS: dict[str, type[Enum]] = {e.__name__: e for e in (CompareOp, ArithOp, ContainsMode, ValueKind, DataType)}
_INIT_FIELDS: dict[type, tuple[str, ...]] = {
    t: tuple(f.name for f in dataclasses.fields(t) if f.init) for t in _NODES.values()
}


def encode_expr(expr: Expr) -> bytes:
    """``expr`` as UTF-8 JSON. Raises ``TypeError`` for a value no node of ``ast.py`` holds."""
    return json.dumps(_encode(expr), separators=(",", ":"), ensure_ascii=False).encode()


def decode_expr(raw: bytes) -> Expr:
    """The tree ``encode_expr`` wrote. Raises ``InvalidArgument`` for anything else."""
    try:
        node = _decode(json.loads(raw))
    except (ValueError, TypeError, KeyError, RecursionError) as err:
        raise InvalidArgument(f"malformed filter expression on the wire: {err}") from None
    if not isinstance(node, EXPR_TYPES):
        raise InvalidArgument(f"malformed filter expression on the wire: a {type(node).__name__} is no predicate")
    return node


def _encode(value: Any) -> Any:
    if type(value) in _INIT_FIELDS:
        out = {"$n": type(value).__name__}
        for name in _INIT_FIELDS[type(value)]:
            out[name] = _encode(getattr(value, name))
        return out
    if isinstance(value, Enum):
        if type(value).__name__ not in _ENUMS:
            raise TypeError(f"no wire form for enum {type(value).__name__}")
        return {"$e": type(value).__name__, "v": value.value}
    if isinstance(value, tuple | list):
        if all(type(v) is int for v in value):  # long id lists: no call per element
            return list(value)
        return [_encode(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"no wire form for {type(value).__name__} in a filter expression")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "$e" in value:
            return _ENUMS[value["$e"]](value["v"])
        cls = _NODES[value["$n"]]
        return cls(**{name: _decode(v) for name, v in value.items() if name != "$n"})
    if isinstance(value, list):
        if all(type(v) is int for v in value):
            return tuple(value)
        return tuple(_decode(v) for v in value)
    return value
