"""``TEXT_MATCH`` / ``PHRASE_MATCH`` in filters: binding (checked against the field) and evaluation.

Milvus' forms: ``TEXT_MATCH(field, 'words')`` and ``PHRASE_MATCH(field, 'words'[, slop])``
(slop an integer >= 0, default 0), on a ``VARCHAR`` field with ``enable_match``.
Rows are matched through a token index of each chunk of the column, built by
analyzing its rows with the field's analyzer on first use
(``common/fulltext/text_index.py``); a null text never matches.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from common.errors import IllegalFilter
from common.expr.ast import FieldRef, Literal, Operand, TextMatch, render
from common.fulltext.analyzer import analyzer_for
from common.fulltext.functions import ANALYZER_PARAMS, match_enabled
from common.fulltext.text_index import indexed_match
from common.schema import CollectionSchema

TEXT_FUNCTIONS = frozenset({"text_match", "phrase_match"})


def bind_text_match(schema: CollectionSchema, name: str, args: Sequence[Operand]) -> TextMatch:
    phrase = name == "phrase_match"
    shown = name.upper()
    if len(args) not in ((2, 3) if phrase else (2,)):
        raise IllegalFilter(f"function {shown} takes {'2 or 3' if phrase else 2} arguments, got {len(args)}")
    target = args[0]
    if not isinstance(target, FieldRef):
        raise IllegalFilter(f"the first argument of {shown} must be a VARCHAR field, got {render(target)}")
    field = schema.field(target.name)
    if not match_enabled(field):
        raise IllegalFilter(f"field \"{field.name}\" does not enable match: set enable_match (and enable_analyzer)")
    query = args[1]
    if not isinstance(query, Literal) or not isinstance(query.value, str):
        raise IllegalFilter(f"the second argument of {shown} must be a string, got {render(query)}")
    slop: int | None = None
    if phrase:
        slop = 0
        if len(args) == 3:
            raw = args[2]
            if not isinstance(raw, Literal) or isinstance(raw.value, bool) or not isinstance(raw.value, int) or raw.value < 0:
                raise IllegalFilter(f"the slop of {shown} must be a non-negative integer, got {render(raw)}")
            slop = raw.value
    return TextMatch(field=target, query=query.value, slop=slop,
                     analyzer_params=field.type_params.get(ANALYZER_PARAMS, ""))


def text_match_mask(column: pa.Array | pa.ChunkedArray, node: TextMatch) -> pa.Array:
    """The rows of ``column`` (texts) the predicate matches, as an Arrow bool array (no nulls); each
    chunk through its token index (``common/fulltext/text_index.py``)."""
    analyzer = analyzer_for(node.analyzer_params or None)
    return pa.array(indexed_match(node.analyzer_params, analyzer, column, node.query, node.slop))
