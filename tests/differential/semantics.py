"""Milvus's value rules in plain Python, as Strata documents them (``common/expr/README.md``).

* three-valued logic: a predicate reading a null column is unknown (None);
  ``not`` keeps unknown, ``and``/``or`` are Kleene, unknown is not a match;
  ``is null`` is never unknown;
* on a JSON path, an absent key, JSON ``null`` or a value of another type
  makes a comparison false, and ``!=`` is ``not ==`` (so it holds there);
  numbers compare across int and float, booleans only with booleans;
* integer ``/`` truncates toward zero and ``%`` takes the dividend's sign (C);
* ``like``: ``%`` any run, ``_`` one character, ``\\`` escapes the next.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Final

from tests.differential.data import Row

OPS: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
MIRRORED: Final[Mapping[str, str]] = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


class _Missing:
    """A JSON path that leads nowhere (absent key, index out of range, not a container)."""


MISSING: Final = _Missing()
JsonPath = tuple[str | int, ...]


def literal(value: object) -> str:
    """A constant as filter text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return repr(value)


def path_text(path: JsonPath) -> str:
    return "meta" + "".join(f'["{k}"]' if isinstance(k, str) else f"[{k}]" for k in path)


def json_value(row: Row, path: JsonPath) -> object:
    """The value at ``path`` in the row's ``meta``: None for a null column, MISSING where the path leads nowhere.

    A JSON ``null`` found at the path is returned as MISSING too: no comparison holds on it.
    """
    doc = row["meta"]
    if doc is None:
        return None
    cur: object = doc
    for key in path:
        cur = _child(cur, key)
        if cur is MISSING:
            return MISSING
    return MISSING if cur is None else cur


def _child(node: object, key: str | int) -> object:
    if isinstance(key, str):
        return node.get(key, MISSING) if isinstance(node, dict) else MISSING
    return node[key] if isinstance(node, list) and 0 <= key < len(node) else MISSING


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_compare(op: str, value: object, constant: object) -> bool:
    """Milvus's comparison of a JSON value with a constant: false across types, and ``!=`` is ``not ==``."""
    comparable = (
        (is_number(value) and is_number(constant))
        or (isinstance(value, str) and isinstance(constant, str))
        or (op in ("==", "!=") and isinstance(value, bool) and isinstance(constant, bool))
        or (op in ("==", "!=") and isinstance(value, list) and isinstance(constant, list))
    )
    if not comparable:
        return op == "!="
    return OPS[op](value, constant)


def c_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as in C."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def c_mod(a: int, b: int) -> int:
    """Remainder with the sign of the dividend, as in C."""
    return a - b * c_div(a, b)


def arithmetic(op: str, a: Any, b: Any) -> Any:
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return c_div(a, b) if isinstance(a, int) and isinstance(b, int) else a / b
        case "%":
            return c_mod(a, b)
    raise ValueError(f"unknown arithmetic operator {op}")


def like_pattern(pattern: str) -> re.Pattern[str]:
    """A LIKE pattern as a regex: ``%`` any run, ``_`` one character, ``\\`` escapes the next."""
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.compile("".join(parts), re.DOTALL)


def contains(fn: str, have: Collection[object], values: Sequence[object]) -> bool:
    """``json_contains*`` / ``array_contains*`` (any spelling) of ``values[0]`` or ``values`` in ``have``."""
    name = fn.lower()
    if name.endswith("_all"):
        return all(v in have for v in values)
    if name.endswith("_any"):
        return any(v in have for v in values)
    return values[0] in have

