"""Filter text to a bound, typed AST: lark (LALR) parsing plus the binder."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lark import Lark, Tree, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.exceptions import VisitError

from common.errors import IllegalFilter
from common.expr.ast import Expr
from common.expr.binder import Binder
from common.expr.literal_lists import Shortened, shorten
from common.expr.literals import quote
from common.schema import CollectionSchema

_GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")
#: Texts up to this long that fail after their lists were shortened are parsed again whole, so
#: their error reads exactly as it would have; longer ones keep the shortened text's error.
EXACT_ERRORS_UP_TO = 64 << 10

#: The deepest parse tree a filter may have. Every operator, function call and
#: list that holds another one adds a level (`not not a`, `-(-a)`, `a + 1 + 1`,
#: `[[1]]`); flat chains (`a == 1 or a == 2 or ...`, `a in [1, 2, ...]`) and
#: redundant parentheses do not. Milvus bounds the nesting of filters too
#: (`proxy.maxExpressionDepth`). Binding and evaluation recurse per level (about
#: three Python frames each), so this keeps them well inside the interpreter's
#: recursion limit, whatever the text.
MAX_DEPTH = 128


@functools.cache
def _parser() -> Lark:
    # Built once per process. A LALR Lark instance keeps no per-parse state,
    # so concurrent parse() calls from several threads are safe.
    # The basic (not contextual) lexer keeps keywords reserved everywhere, so
    # `a > 1 and and` is an error rather than a dynamic field named "and".
    return Lark(_GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", lexer="basic", start="start")


def _syntax_message(text: str, err: UnexpectedInput, short: Shortened | None = None) -> str:
    """``short``: the error is in ``short.text``, and the message names its place in ``text``."""
    if isinstance(err, UnexpectedEOF) or (isinstance(err, UnexpectedToken) and err.token.type == "$END"):
        return f"cannot parse expression: `{quote(text)}`, unexpected end of expression"
    if isinstance(err, UnexpectedCharacters):
        what = f"unexpected character {err.char!r}"
    elif isinstance(err, UnexpectedToken):
        what = f"unexpected token {quote(str(err.token))!r}"
    else:
        what = "syntax error"
    line, column = err.line, err.column
    if short is not None and err.pos_in_stream is not None:
        position, in_list = short.where(err.pos_in_stream)
        what = "unexpected list" if in_list else what
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
    where = f"column {column}" if line in (1, -1) else f"line {line}, column {column}"
    return f"cannot parse expression: `{quote(text)}`, {what} at {where}"


def _check_depth(tree: Tree[Any]) -> None:
    """Refuse a parse tree deeper than ``MAX_DEPTH``, walking it without recursion.

    The LALR parser builds the tree with an explicit stack, so any nesting
    parses; this check runs before the binder, whose walk is recursive.
    """
    stack: list[tuple[Tree[Any], int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise IllegalFilter(
                f"filter expression is nested more than {MAX_DEPTH} levels deep "
                "(operators, function calls and lists inside one another); simplify it"
            )
        stack.extend((child, depth + 1) for child in node.children if isinstance(child, Tree))


def parse_filter(text: str, schema: CollectionSchema, params: Mapping[str, Any] | None = None) -> Expr:
    """Parse a Milvus boolean filter and bind it to ``schema``.

    Args:
        text: The filter, e.g. ``'age > {min_age} and name like "a%"'``.
        schema: The collection the filter runs against. Names that are not
            fields resolve to keys of the dynamic field when the schema
            enables it.
        params: Values for ``{placeholders}`` (Milvus ``filter_params``):
            scalars, or lists and tuples of scalars.

    Returns:
        The typed expression tree, ready for :func:`evaluate`.

    Raises:
        IllegalFilter: The text does not parse (the message names the
            offending token and its column), nests deeper than
            ``MAX_DEPTH``, names an unknown field or placeholder, or mixes
            incompatible types.
    """
    if not text.strip():
        raise IllegalFilter("filter expression is empty")
    # Long literal lists skip the grammar (literal_lists.py); a short text's errors are reworded
    # by the grammar on the whole text, unless that is long.
    short = shorten(text, params or {})
    if short is not None:
        try:
            return _parse(short.text, schema, short.params, shown=text, short=short)
        except IllegalFilter:
            if len(text) > EXACT_ERRORS_UP_TO:
                raise
    return _parse(text, schema, params or {}, shown=text)


def _parse(
    text: str, schema: CollectionSchema, params: Mapping[str, Any], *, shown: str, short: Shortened | None = None
) -> Expr:
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise IllegalFilter(_syntax_message(shown, err, short)) from err
    _check_depth(tree)
    try:
        expr: Expr = Binder(schema, params).transform(tree)
    except VisitError as err:
        if isinstance(err.orig_exc, IllegalFilter):
            raise err.orig_exc from None
        raise
    return expr
