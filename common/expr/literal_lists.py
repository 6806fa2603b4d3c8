"""Long lists of literals taken out of a filter before the grammar sees it.

Lark's LALR parser and the binder cost a few microseconds per token: a
200,000-id ``id in [0, 1, ...]`` (1.3 MB) took about 5 s to parse and bind,
holding the interpreter lock all along. ``shorten`` finds every flat list of
at least ``MIN_ELEMENTS`` scalar literals that stands where the grammar reads
a token (not inside a string), decodes it with regular expressions, and puts a
``{placeholder}`` in its place whose value is the decoded tuple. The grammar
then parses a short text, and the binder takes the list exactly as a template
value (``filter_params``), which it turns into the same ``ListLiteral`` a list
literal gives.

Same meaning, element by element, as the grammar (``grammar.lark``) and the
binder give the literal:

* numbers: ``FLOAT`` and ``INT`` tokens (``1.5``, ``.5``, ``1e3``, ``0x1F``,
  ``0b101``, ``0o17``, ``42``), each with at most one ``+``/``-`` in front
  (whitespace between allowed, as for the unary operator); decoded as the
  binder decodes them;
* strings: ``"..."`` or ``'...'``, escapes decoded by the binder's ``unquote``;
* ``true`` / ``false`` in any case.

Anything else in a list (nested lists, names, expressions, ``- -1``), an
integer outside int64, or a list shorter than ``MIN_ELEMENTS`` leaves that
list to the grammar. Whitespace is the grammar's (space, tab, form feed,
CR, LF); a trailing comma is allowed, as in the grammar.

Syntax: a placeholder is an atom wherever a list literal is one, and after a
field name (where ``[`` would start an index) both are errors, so the short
text parses if and only if the original does. ``Shortened.where`` maps a
position in the short text back to the original, for error messages.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.errors import IllegalFilter
from common.expr.literals import _parse_int, unquote

#: Lists with fewer elements are left to the grammar (cheap there, and it words their errors).
MIN_ELEMENTS = 64
PLACEHOLDER_PREFIX = "__strata_list_"

_WS = r"[ \t\f\r\n]*"
# The grammar's terminals (grammar.lark), tried in the lexer's order: FLOAT before INT.
_FLOAT = r"(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+"
_INT = r"0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|\d+"
_STRING = r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\''
_BOOL = r"(?i:true|false)"


def _element(named: bool) -> str:
    """One element, then the end of its token (a comma or the closing bracket, after whitespace)."""

    def group(name: str, pattern: str) -> str:
        return f"(?P<{name}>{pattern})" if named else f"(?:{pattern})"

    end = rf"(?={_WS}[,\]])"
    number = f"{group('sign', rf'[+-]{_WS}')}?(?:{group('float', _FLOAT)}|{group('int', _INT)}){end}"
    return f"{number}|{group('string', _STRING)}|{group('bool', _BOOL)}{end}"


_ITEM = rf"(?>{_WS}(?:{_element(named=False)}){_WS})"
# A string literal (skipped whole, so a bracket inside one is never taken) or a flat list.
_SCAN = re.compile(rf"{_STRING}|\[(?P<body>{_ITEM}(?:,{_ITEM})*+(?:,{_WS})?+)\]", re.DOTALL)
_ELEMENTS = re.compile(_element(named=True), re.DOTALL)
# Decimal integers only, the sign next to the digits: Python's int() reads them as the binder does.
_DECIMALS = re.compile(rf"{_WS}[+-]?\d+{_WS}(?:,{_WS}[+-]?\d+{_WS})*(?:,{_WS})?", re.DOTALL)
_INT64 = (-(2**63), 2**63)


@dataclass(frozen=True, slots=True)
class Shortened:
    """A filter with its long literal lists replaced by placeholders."""

    text: str
    params: dict[str, Any]  # the caller's parameters plus one tuple per placeholder
    spans: tuple[tuple[int, int, int, int], ...]  # (short start, short end, original start, original end)

    def where(self, position: int) -> tuple[int, bool]:
        """The position in the original text of ``position`` in the short one, and whether it falls
        inside a replaced list (then the list's opening bracket)."""
        i = bisect.bisect_right([s[0] for s in self.spans], position) - 1
        if i < 0:
            return position, False
        short_start, short_end, start, end = self.spans[i]
        if position < short_end:
            return start, True
        return position + (end - start) - (short_end - short_start), False


def shorten(text: str, params: Mapping[str, Any]) -> Shortened | None:
    """``text`` with every long literal list replaced by a placeholder, or None when it has none."""
    if text.count(",") < MIN_ELEMENTS - 1:
        return None
    out: list[str] = []
    values: dict[str, Any] = {}
    spans: list[tuple[int, int, int, int]] = []
    done = 0  # original text consumed into ``out``
    length = 0  # characters in ``out``
    for match in _SCAN.finditer(text):
        body = match.group("body")
        if body is None or body.count(",") < MIN_ELEMENTS - 1:
            continue
        decoded = _decode(body + "]")
        if decoded is None or len(decoded) < MIN_ELEMENTS:
            continue
        name = f"{PLACEHOLDER_PREFIX}{len(values)}"
        if name in params:
            return None  # a caller's own parameter of that name: leave everything to the grammar
        values[name] = decoded
        start, end = match.span()
        out.append(text[done:start])
        length += start - done
        placeholder = "{" + name + "}"
        spans.append((length, length + len(placeholder), start, end))
        out.append(placeholder)
        length += len(placeholder)
        done = end
    if not values:
        return None
    out.append(text[done:])
    return Shortened(text="".join(out), params={**params, **values}, spans=tuple(spans))


def _decode(listed: str) -> tuple[Any, ...] | None:
    """The elements of a list the scanner matched (its text after ``[``), or None to leave the list
    to the grammar."""
    body = listed[:-1]
    if _DECIMALS.fullmatch(body):
        try:
            ints = [int(part) for part in body.split(",") if part.strip(" \t\f\r\n")]
        except ValueError:  # more digits than int() reads: the grammar reports it
            return None
        if ints and not (_INT64[0] <= min(ints) and max(ints) < _INT64[1]):
            return None
        return tuple(ints)
    out: list[Any] = []
    for m in _ELEMENTS.finditer(listed):
        if m.group("string") is not None:
            out.append(unquote(m.group("string")))
        elif m.group("bool") is not None:
            out.append(m.group("bool").lower() == "true")
        else:
            negative = (m.group("sign") or "").startswith("-")
            number: int | float
            if m.group("float") is not None:
                number = float(m.group("float"))
            else:
                try:
                    number = _parse_int(m.group("int"))
                except (IllegalFilter, ValueError):
                    return None
                if not _INT64[0] <= (-number if negative else number) < _INT64[1]:
                    return None
            out.append(-number if negative else number)
    return tuple(out)
