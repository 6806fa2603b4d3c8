"""The filter language's literals and how errors name things: string escapes, int64 and float64
literals, text cut to a readable length, a node described (``VARCHAR field 'name'``).

Shared by the binder (``binder.py``) and the literal-list fast path (``literal_lists.py``).
"""

from __future__ import annotations

import math
import re

from common.errors import IllegalFilter
from common.expr.ast import (
    ArrayElement,
    ArrayRef,
    FieldRef,
    JsonPath,
    ListLiteral,
    Literal,
    Node,
    render,
    render_constant,
)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0"}
_ESCAPES.update({c: c for c in "\\\"'/"})
# A backslash and what it escapes: \\uXXXX or any one character (a lone
# trailing backslash is kept as written).
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)
# 2**63 itself is let through so that -9223372036854775808 can be written.
_INT_LIMIT = 2**63
# More significant digits than this (64 binary digits) cannot be an int64 in
# any base; longer literals are refused before being converted.
_INT_DIGITS = 64
_INT_BASES = {"0x": 16, "0b": 2, "0o": 8}
# Literal text quoted in error messages is cut to this many characters.
_QUOTE_LIMIT = 200


def unquote(token: str) -> str:
    """The value of a quoted string literal.

    Standard escapes (``\\n``, ``\\"``, ``\\uXXXX``...) are decoded; any other
    backslash pair is kept as written, so ``like`` patterns can use ``\\%``.
    """
    body = token[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(_unescape, body)


def _unescape(match: re.Match[str]) -> str:
    escaped = match.group(1)
    if len(escaped) == 5:  # uXXXX
        return chr(int(escaped[1:], 16))
    return _ESCAPES.get(escaped, match.group(0))


def quote(text: str) -> str:
    """``text`` as an error message shows it: cut after ``_QUOTE_LIMIT`` characters."""
    if len(text) <= _QUOTE_LIMIT:
        return text
    return f"{text[:_QUOTE_LIMIT]}... ({len(text)} characters)"


def describe(node: Node) -> str:
    """A node as error messages name it: ``VARCHAR field 'name'``, ``number 3`` (cut when long)."""
    return quote(_describe(node))


def _describe(node: Node) -> str:
    match node:
        case Literal(value=bool()):
            return f"boolean {render_constant(node.value)}"
        case Literal(value=str()):
            return f"string {render_constant(node.value)}"
        case Literal():
            return f"number {render_constant(node.value)}"
        case ListLiteral():
            return f"list {render_constant(node.values)}"
        case FieldRef():
            return f"{node.dtype.name} field '{node.name}'"
        case ArrayRef():
            return f"ARRAY<{node.element_type.name}> field '{node.name}'"
        case ArrayElement():
            return f"{node.array.element_type.name} element '{render(node)}'"
        case JsonPath():
            return f"JSON value {render(node)}"
        case _:
            return f"expression `{render(node)}`"


def _parse_int(text: str) -> int:
    base = _INT_BASES.get(text[:2].lower(), 10)
    digits = (text if base == 10 else text[2:]).lstrip("0")
    if len(digits) > _INT_DIGITS:
        raise IllegalFilter(f"integer {quote(text)} is out of the int64 range")
    value = int(digits or "0", base)
    if value > _INT_LIMIT:
        raise IllegalFilter(f"integer {quote(text)} is out of the int64 range")
    return value


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise IllegalFilter(f"number {quote(text)} is out of the float64 range")
    return value
