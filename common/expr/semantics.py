"""Value semantics of the filter language for one row at a time.

The evaluator uses these for JSON values (whose type is only known per row)
and the binder uses them to fold constant sub-expressions. The vectorised
Arrow paths in ``evaluator.py`` implement the same rules for scalar columns:

* numbers (int or float, never bool) compare numerically with numbers;
  strings with strings; booleans only equal booleans; lists and objects
  compare element-wise for equality only. Any other pairing, an absent
  value (``MISSING``) or a JSON ``null`` is simply not equal and not ordered;
* ``!=`` is always the negation of ``==``;
* integer ``/`` truncates toward zero and ``%`` takes the dividend's sign
  (C semantics, like Milvus); dividing by zero yields no value;
* ``**`` and arithmetic with a float operand are IEEE float64.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

import numpy as np

from common.expr.ast import ArithOp, CompareOp


class _Missing:
    """The type of ``MISSING``: no value at a JSON path."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


#: No value: an absent JSON key, an index out of range, a non-numeric operand.
MISSING: Final = _Missing()


def is_number(value: Any) -> bool:
    """Whether ``value`` is a JSON number (``bool`` is not a number here)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Type-aware deep equality of two JSON values (``1 == 1.0``, ``true != 1``)."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, bool) and isinstance(b, bool):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a is None and b is None


def compare(op: CompareOp, a: Any, b: Any) -> bool:
    """``a op b`` on two row values, never raising."""
    if op is CompareOp.NE:
        return not compare(CompareOp.EQ, a, b)
    if a is MISSING or b is MISSING or a is None or b is None:
        return False
    if op is CompareOp.EQ:
        return json_equal(a, b)
    if not (is_number(a) and is_number(b)) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    match op:
        case CompareOp.LT:
            return bool(a < b)
        case CompareOp.LE:
            return bool(a <= b)
        case CompareOp.GT:
            return bool(a > b)
        case _:
            return bool(a >= b)


def _int_div(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def arith(op: ArithOp, a: Any, b: Any) -> Any:
    """``a op b`` on two row values; ``MISSING`` unless both are numbers."""
    if not (is_number(a) and is_number(b)):
        return MISSING
    if op in (ArithOp.DIV, ArithOp.MOD) and b == 0:
        return MISSING
    if isinstance(a, int) and isinstance(b, int) and op is not ArithOp.POW:
        match op:
            case ArithOp.ADD:
                return a + b
            case ArithOp.SUB:
                return a - b
            case ArithOp.MUL:
                return a * b
            case ArithOp.DIV:
                return _int_div(a, b)
            case _:
                return a - _int_div(a, b) * b
    x, y = np.float64(a), np.float64(b)
    with np.errstate(all="ignore"):
        match op:
            case ArithOp.ADD:
                return float(x + y)
            case ArithOp.SUB:
                return float(x - y)
            case ArithOp.MUL:
                return float(x * y)
            case ArithOp.DIV:
                return float(x / y)
            case ArithOp.MOD:
                return float(np.fmod(x, y))
            case _:
                return float(np.power(x, y))


def like_regex(pattern: str) -> re.Pattern[str]:
    """The regular expression a ``like`` pattern stands for (use ``fullmatch``).

    ``%`` matches any run of characters (newlines too), ``_`` exactly one,
    and a backslash makes the next character literal; a trailing backslash
    is ignored. This is also how Arrow's ``match_like`` reads patterns.
    """
    parts: list[str] = []
    escaped = False
    for char in pattern:
        if escaped:
            parts.append(re.escape(char))
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def parse_json(text: str | bytes | None) -> Any:
    """One JSON document; ``MISSING`` for a null cell or text that is not JSON."""
    if text is None:
        return MISSING
    try:
        return json.loads(text)
    except ValueError:
        return MISSING
    except RecursionError:  # deeper than any write path lets in (common/jsonvalue.py)
        return MISSING


def extract(doc: Any, keys: tuple[str | int, ...]) -> Any:
    """The value at ``keys`` inside ``doc``, or ``MISSING``."""
    for key in keys:
        if isinstance(key, str):
            if not isinstance(doc, dict) or key not in doc:
                return MISSING
        elif not isinstance(doc, list) or not 0 <= key < len(doc):
            return MISSING
        doc = doc[key]
    return doc


def _hash_key(value: Any) -> tuple[str, Any] | None:
    """A hashable key under which ``json_equal`` values collide, if there is one."""
    if is_number(value):
        return ("n", value)  # 1 and 1.0 share a hash and compare equal
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, str):
        return ("s", value)
    return None


class ValueSet:
    """Membership under ``json_equal``, with hashing for scalar values."""

    __slots__ = ("_keys", "_others")

    def __init__(self, values: Iterable[Any]) -> None:
        self._keys: set[tuple[str, Any]] = set()
        self._others: list[Any] = []
        for value in values:
            key = _hash_key(value)
            if key is None:
                self._others.append(value)
            else:
                self._keys.add(key)

    def __contains__(self, value: object) -> bool:
        if value is MISSING:
            return False
        key = _hash_key(value)
        if key is not None:
            return key in self._keys
        return any(json_equal(value, other) for other in self._others)
