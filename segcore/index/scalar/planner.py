"""Filters answered from a segment's scalar indexes instead of its columns.

``IndexedFilter`` holds a segment's scalar indexes and answers the leaf
predicates they cover, as a ``bool`` per row with the value the scan gives
the leaf *before* its null handling (``common/expr/leafindex.py``): the
evaluator then applies nulls, ``not``, ``and`` and ``or`` as always, so a
filter mixing indexed and scanned predicates reads only the columns of the
scanned ones. ``mask`` answers a whole filter with numpy alone when every
leaf is covered and none can be unknown (no null rows under any of them).

Covered leaves (any other leaf is scanned):

| leaf | field index | JSON path index (cast type) |
|---|---|---|
| ``f op c`` (``== != < <= > >=``), either side | numbers, strings, booleans (``==``/``!=``) | DOUBLE (numbers), VARCHAR (strings), BOOL (booleans, ``==``/``!=``) |
| ``f in [..]`` | yes | by the kinds of the values (each needs its cast) |
| ``f like "p"`` | strings (a prefix is a key range; NGRAM narrows by n-grams; else every distinct key is matched once) | VARCHAR |
| ``array_contains*(a, ..)`` | ARRAY fields | ARRAY_DOUBLE / ARRAY_VARCHAR / ARRAY_BOOL |
| ``TEXT_MATCH`` / ``PHRASE_MATCH`` | the segment's text-match index of the field (``segcore/index/text``), built with the analyzer the filter names | — |

Every comparison is made in the domain the scan uses: an integer column
compared with a float, or with an integer beyond int64, compares as float64
(``evaluator._mixed``); ``in`` lists follow ``evaluator._hashable``. A JSON
index whose values may compare differently from the scan (``exact`` false:
integers beyond 2**53 cast to DOUBLE) is not used.

A DOUBLE path index with ``json_cast_function`` ``STRING_TO_DOUBLE`` answers
what a plain DOUBLE one answers, where Milvus uses it (a numeric constant
compared with the path, ``in`` of numbers): from the numbers at the path
only. The strings it converted (``ScalarIndex.converted``) are not read, so
``p > 10`` does not match ``"12"``: as the scan (and Milvus on a growing
segment), where Milvus's sealed segments would match it (see the README).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow.compute as pc

from common.expr import semantics
from common.expr.ast import (
    And,
    ArrayRef,
    Compare,
    CompareOp,
    Const,
    ContainsMode,
    Expr,
    FieldRef,
    InList,
    IsNull,
    JsonContains,
    JsonPath,
    Like,
    Literal,
    Not,
    Or,
    TextMatch,
)
from common.fulltext.analyzer import analyzer_for
from segcore.index.scalar.index import ScalarIndex
from segcore.index.scalar.ngram import candidate_keys
from segcore.index.scalar.spec import JsonCast
from segcore.index.text.index import TextIndex

#: A segment's text-match index of a field, with the analyzer params it was built with (``segcore/index/text``).
TextIndexed = tuple[str, TextIndex]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EXACT_INT = 2**53
_FLIPPED = {CompareOp.EQ: CompareOp.EQ, CompareOp.NE: CompareOp.NE, CompareOp.LT: CompareOp.GT,
            CompareOp.LE: CompareOp.GE, CompareOp.GT: CompareOp.LT, CompareOp.GE: CompareOp.LE}


class IndexedFilter:
    """The scalar indexes of one segment, as the filter evaluator asks them (thread-safe: read only)."""

    def __init__(self, indexes: Iterable[ScalarIndex], text: Mapping[str, TextIndexed] | None = None) -> None:
        self._text = dict(text or {})  # by field: its text-match index and the analyzer params it was built with
        self._fields: dict[str, ScalarIndex] = {}
        self._paths: dict[tuple[str, tuple[str | int, ...]], dict[JsonCast, ScalarIndex]] = {}
        for index in indexes:
            spec = index.spec
            if spec.json_path is None:
                self._fields[spec.field_name] = index
            elif spec.json_cast is not None and index.exact:
                key = (spec.json_path.field, spec.json_path.keys)
                self._paths.setdefault(key, {})[spec.json_cast] = index

    def __bool__(self) -> bool:
        return bool(self._fields or self._paths or self._text)

    # ------------------------------------------------------------- whole filter

    def mask(self, expr: Expr) -> np.ndarray | None:
        """The filter's result per row from indexes alone; ``None`` if any leaf must be scanned or may be
        unknown (then the evaluator combines, calling ``leaf``)."""
        match expr:
            case Const():
                return None
            case Not():
                inner = self.mask(expr.operand)
                return None if inner is None else ~inner
            case And() | Or():
                parts = []
                for operand in expr.operands:
                    part = self.mask(operand)
                    if part is None:
                        return None
                    parts.append(part)
                return np.logical_and.reduce(parts) if isinstance(expr, And) else np.logical_or.reduce(parts)
            case IsNull():
                return None
            case TextMatch():
                return self._text_match(expr)  # never unknown: a null text does not match
            case _:
                index = self._index_of(expr)
                if index is None or index.has_nulls:
                    return None
                return self.leaf(expr)

    def rows(self, expr: Expr, limit: int | None = None) -> np.ndarray | None:
        """The rows matching the filter (each once, in no particular order), from indexes alone, when it is
        ``==``, a range or ``in`` on indexed columns, or ``and``/``or`` of those; ``None`` otherwise.

        For a selective filter this skips every per-row pass of ``mask``: the read takes these rows'
        visibility instead of combining masks of the whole segment. ``limit``: ``None`` as soon as a
        predicate matches more rows (nothing large is sorted, merged or intersected)."""
        match expr:
            case And() | Or():
                parts = []
                for operand in expr.operands:
                    part = self.rows(operand, limit)
                    if part is None:
                        return None
                    parts.append(part)
                combine = np.intersect1d if isinstance(expr, And) else np.union1d
                result = parts[0]
                for part in parts[1:]:
                    result = combine(result, part)
                return None if limit is not None and len(result) > limit else result
            case Compare() if expr.op is not CompareOp.NE:
                found = self._compare_rows(expr)
            case InList():
                found = self._in_list_rows(expr)
            case _:
                return None
        if found is None or (limit is not None and len(found) > limit):
            return None
        return found  # a row holds one value of a scalar column or JSON path: each row once

    def _compare_rows(self, expr: Compare) -> np.ndarray | None:
        op, column, constant = expr.op, expr.left, expr.right
        if isinstance(column, Literal):
            op, column, constant = _FLIPPED[op], constant, column
        if not isinstance(constant, Literal):
            return None
        value = constant.value
        if isinstance(column, FieldRef):
            index = self._fields.get(column.name)
            domain = None if index is None else _field_domain(index, value)
            if index is None or domain is None or (domain[0].dtype == np.bool_ and op.is_ordering):
                return None
            return _span(index.postings, domain[0], op, domain[1])
        if isinstance(column, JsonPath):
            index = self._json_index(column, value)
            if index is None:
                return None
            return _span(index.postings, index.postings.keys, op, float(value) if _is_number(value) else value)
        return None

    def _in_list_rows(self, expr: InList) -> np.ndarray | None:
        operand = expr.operand
        parts: list[np.ndarray] = []
        if isinstance(operand, FieldRef):
            found = self._hashed_field(operand.name, expr.values)
            if found is None:
                return None
            index, domain, values = found
            parts = [_span(index.postings, domain, CompareOp.EQ, v) for v in values]
        elif isinstance(operand, JsonPath):
            for value in expr.values:
                json_index = self._json_index(operand, value)
                if json_index is None:
                    return None
                parts.append(_span(json_index.postings, json_index.postings.keys, CompareOp.EQ,
                                   float(value) if _is_number(value) else value))
        else:
            return None
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    # --------------------------------------------------------------- one leaf

    def leaf(self, expr: Expr) -> np.ndarray | None:
        """The leaf's value per row from an index, before null handling; ``None``: not covered."""
        match expr:
            case Compare():
                return self._compare(expr)
            case InList():
                return self._in_list(expr)
            case Like():
                return self._like(expr)
            case JsonContains():
                return self._contains(expr)
            case TextMatch():
                return self._text_match(expr)
            case _:
                return None

    def _text_match(self, expr: TextMatch) -> np.ndarray | None:
        found = self._text.get(expr.field.name)
        if found is None or found[0] != expr.analyzer_params:
            return None
        return found[1].match(analyzer_for(expr.analyzer_params or None), expr.query, expr.slop)

    def _index_of(self, expr: Expr) -> ScalarIndex | None:
        """Some index the leaf reads (for its null flag), if the leaf is covered at all."""
        columns = []
        match expr:
            case Compare():
                columns = [expr.left, expr.right]
            case InList() | Like():
                columns = [expr.operand]
            case JsonContains():
                columns = [expr.path]
        for column in columns:
            if isinstance(column, FieldRef | ArrayRef):
                return self._fields.get(column.name)
            if isinstance(column, JsonPath):
                casts = self._paths.get((column.field, column.keys))
                return next(iter(casts.values())) if casts else None
        return None

    def _compare(self, expr: Compare) -> np.ndarray | None:
        op, column, constant = expr.op, expr.left, expr.right
        if isinstance(column, Literal):
            op, column, constant = _FLIPPED[op], constant, column
        if not isinstance(constant, Literal):
            return None
        value = constant.value
        if isinstance(column, FieldRef):
            index = self._fields.get(column.name)
            return None if index is None else _compare_field(index, op, value)
        if isinstance(column, JsonPath):
            index = self._json_index(column, value)
            if index is None:
                return None
            return _compare_keys(index, index.postings.keys, op, float(value) if _is_number(value) else value)
        return None

    def _json_index(self, path: JsonPath, value: Any) -> ScalarIndex | None:
        casts = self._paths.get((path.field, path.keys), {})
        if isinstance(value, bool):
            return casts.get(JsonCast.BOOL)
        if isinstance(value, str):
            return casts.get(JsonCast.VARCHAR)
        if _is_number(value) and (isinstance(value, float) or -_EXACT_INT <= value <= _EXACT_INT):
            return casts.get(JsonCast.DOUBLE)
        return None

    def _hashed_field(self, name: str, values: Sequence[Any]) -> tuple[ScalarIndex, np.ndarray, list[Any]] | None:
        """The index of field ``name`` and ``values`` in its hashing domain (``_hash_domain``); None
        when the field has no index or a value cannot be looked up in it."""
        index = self._fields.get(name)
        hashed = None if index is None else _hash_domain(index, values)
        if index is None or hashed is None:
            return None
        return index, hashed[0], hashed[1]

    def _in_list(self, expr: InList) -> np.ndarray | None:
        operand = expr.operand
        if isinstance(operand, FieldRef):
            found = self._hashed_field(operand.name, expr.values)
            if found is None:
                return None
            field_index, domain, values = found
            postings = field_index.postings
            return postings.mask([_span(postings, domain, CompareOp.EQ, v) for v in values])
        if isinstance(operand, JsonPath):
            casts = self._paths.get((operand.field, operand.keys))
            if not casts:
                return None
            out = np.zeros(next(iter(casts.values())).num_rows, dtype=bool)
            for value in expr.values:
                index = self._json_index(operand, value)
                if index is None:
                    return None
                out[_span(index.postings, index.postings.keys, CompareOp.EQ,
                          float(value) if _is_number(value) else value)] = True
            return out
        return None

    def _like(self, expr: Like) -> np.ndarray | None:
        operand = expr.operand
        if isinstance(operand, FieldRef):
            index = self._fields.get(operand.name)
        elif isinstance(operand, JsonPath):
            index = self._paths.get((operand.field, operand.keys), {}).get(JsonCast.VARCHAR)
        else:
            return None
        if index is None or not index.postings.is_string:
            return None
        return _like_rows(index, expr.pattern)

    def _contains(self, expr: JsonContains) -> np.ndarray | None:
        path = expr.path
        if isinstance(path, ArrayRef):
            found = self._hashed_field(path.name, expr.values)
            if found is None:
                return None
            index, domain, values = found
        else:
            casts = self._paths.get((path.field, path.keys), {})
            kinds = {_json_kind(v) for v in expr.values}
            kind = kinds.pop() if len(kinds) == 1 else None
            if kind is None:
                return None
            cast = {"number": JsonCast.ARRAY_DOUBLE, "string": JsonCast.ARRAY_VARCHAR,
                    "bool": JsonCast.ARRAY_BOOL}[kind]
            cast_index = casts.get(cast)
            if cast_index is None:
                return None
            index, domain = cast_index, cast_index.postings.keys
            values = [float(v) if _is_number(v) else v for v in expr.values]
        postings = index.postings
        if expr.mode is ContainsMode.ALL:
            result = np.ones(postings.num_rows, dtype=bool)
            for value in dict.fromkeys(values):
                result &= postings.mask(_span(postings, domain, CompareOp.EQ, value))
            return result
        return postings.mask([_span(postings, domain, CompareOp.EQ, v) for v in values])


def _is_number(value: Any) -> bool:
    return semantics.is_number(value)


def _json_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if _is_number(value) and (isinstance(value, float) or -_EXACT_INT <= value <= _EXACT_INT):
        return "number"
    return None


def _field_domain(index: ScalarIndex, value: Any) -> tuple[np.ndarray, Any] | None:
    """The keys to search and ``value`` in the domain the scan compares ``column op value`` in."""
    keys = index.postings.keys
    if index.postings.is_string:
        return (keys, value) if isinstance(value, str) else None
    if keys.dtype == np.bool_:
        return (keys, value) if isinstance(value, bool) else None
    if isinstance(value, bool) or not _is_number(value):
        return None
    if keys.dtype.kind in "iu":
        if isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
            return keys, value
        return index.float_keys(), float(value)
    return keys, float(value)


def _compare_field(index: ScalarIndex, op: CompareOp, value: Any) -> np.ndarray | None:
    domain = _field_domain(index, value)
    if domain is None:
        return None
    keys, converted = domain
    if keys.dtype == np.bool_ and op.is_ordering:
        return None
    return _compare_keys(index, keys, op, converted)


def _compare_keys(index: ScalarIndex, keys: np.ndarray, op: CompareOp, value: Any) -> np.ndarray:
    postings = index.postings
    if op is CompareOp.NE:
        return ~postings.mask(_span(postings, keys, CompareOp.EQ, value))
    return postings.mask(_span(postings, keys, op, value))


def _span(postings: Any, keys: np.ndarray, op: CompareOp, value: Any) -> np.ndarray:
    """The rows whose key satisfies ``key op value`` (``op`` not ``!=``), searched in ``keys``."""
    if keys.dtype == np.bool_:
        keys = keys.astype(np.int8)
        value = int(value)
    match op:
        case CompareOp.EQ:
            lo, hi = np.searchsorted(keys, value, "left"), np.searchsorted(keys, value, "right")
        case CompareOp.LT:
            lo, hi = 0, np.searchsorted(keys, value, "left")
        case CompareOp.LE:
            lo, hi = 0, np.searchsorted(keys, value, "right")
        case CompareOp.GT:
            lo, hi = np.searchsorted(keys, value, "right"), len(keys)
        case _:
            lo, hi = np.searchsorted(keys, value, "left"), len(keys)
    return postings.span_rows(int(lo), max(int(lo), int(hi)))


def _hash_domain(index: ScalarIndex, values: Sequence[Any]) -> tuple[np.ndarray, list[Any]] | None:
    """``in`` / ``array_contains`` constants in the scan's hashing domain (``evaluator._hashable``)."""
    postings = index.postings
    keys = postings.keys
    if postings.is_string:
        return (keys, list(values)) if all(isinstance(v, str) for v in values) else None
    if keys.dtype == np.bool_:
        return (keys, list(values)) if all(isinstance(v, bool) for v in values) else None
    if any(isinstance(v, bool) or not _is_number(v) for v in values):
        return None
    if keys.dtype.kind in "iu" and all(isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX for v in values):
        return keys, list(values)
    domain = index.float_keys() if keys.dtype.kind in "iu" else keys
    return domain, [float(v) + 0.0 for v in values]


def _like_rows(index: ScalarIndex, pattern: str) -> np.ndarray:
    postings = index.postings
    wildcard = any(c in pattern for c in "%_\\")
    if not wildcard:
        return postings.mask(postings.equal_rows(pattern))
    body = pattern[:-1]
    if pattern.endswith("%") and body and not any(c in body for c in "%_\\"):
        return postings.mask(_prefix_rows(postings, body))
    key_mask: np.ndarray | None = None
    if index.grams is not None:
        key_mask = candidate_keys(index.grams, pattern, index.spec.min_gram, index.spec.max_gram)
    if "\\" in pattern:
        regex = semantics.like_regex(pattern)
        checked = np.flatnonzero(key_mask) if key_mask is not None else range(len(postings.keys))
        matches = np.zeros(len(postings.keys), dtype=bool)
        for position in checked:
            matches[position] = regex.fullmatch(postings.keys[position]) is not None
        return postings.mask(postings.key_mask_rows(matches))
    if key_mask is not None:
        positions = np.flatnonzero(key_mask)
        assert postings.string_keys is not None
        candidates = postings.string_keys.take(positions)
        hits = np.asarray(pc.match_like(candidates, pattern=pattern).to_numpy(zero_copy_only=False), dtype=bool)
        matches = np.zeros(len(postings.keys), dtype=bool)
        matches[positions[hits]] = True
    else:
        matches = postings.keys_matching(lambda keys: pc.match_like(keys, pattern=pattern))
    return postings.mask(postings.key_mask_rows(matches))


def _prefix_rows(postings: Any, prefix: str) -> np.ndarray:
    """Rows of keys starting with ``prefix``: the keys in ``[prefix, successor)`` (code-point order)."""
    keys = postings.keys
    lo = int(np.searchsorted(keys, prefix, "left"))
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        hi = lo
        while hi < len(keys) and keys[hi].startswith(prefix):
            hi += 1
    else:
        hi = int(np.searchsorted(keys, prefix[:-1] + chr(last + 1), "left"))
    return postings.span_rows(lo, max(lo, hi))
