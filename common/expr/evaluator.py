"""Evaluate a bound filter over an Arrow table, one boolean per row.

Scalar columns are evaluated vectorised with ``pyarrow.compute``. JSON
columns (and the dynamic field) are parsed once per evaluation and per
column; values at JSON paths are then compared row by row with the rules of
``semantics.py``, which the Arrow paths mirror.

ARRAY columns (``list<element>``) stay vectorised too: ``a[i]`` is taken from
the list values through the offsets, ``array_length`` is the list length,
``array_contains*`` match the flattened values (``is_in`` / ``index_in``) and
map hits back to rows by their parent row, and ``a == [..]`` compares the
length and then each position.

Null handling is three-valued (Kleene) logic, as in SQL:

* a leaf predicate (comparison, ``in``, ``like``, ``json_contains*``,
  ``exists``) is *unknown* on a row where any column it reads is null; the
  dynamic field is the exception: a null ``$meta`` reads as ``{}``;
* a leaf predicate reading ``a[i]`` is false on a row whose array has no
  element ``i`` (``!=`` included, as in Milvus);
* otherwise it is true or false; an absent JSON key, a JSON value of another
  type or a division by zero makes it false, and ``!=`` is the negation of
  ``==`` (so ``meta["k"] != 1`` holds where ``k`` is absent, as in Milvus);
* ``not`` keeps unknown unknown; ``and``/``or`` follow Kleene logic;
  ``is null`` is never unknown;
* unknown counts as false in the final result.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, TypeAlias, assert_never

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.errors import IllegalFilter
from common.expr import semantics
from common.expr.ast import (
    And,
    Arith,
    ArithOp,
    ArrayElement,
    ArrayLength,
    ArrayRef,
    Compare,
    CompareOp,
    Const,
    ContainsMode,
    Exists,
    Expr,
    FieldRef,
    InList,
    IsNull,
    JsonContains,
    JsonPath,
    Like,
    ListLiteral,
    Literal,
    Not,
    Operand,
    Or,
    TextMatch,
    ValueKind,
    field_kind,
    iter_columns,
    iter_elements,
    operand_kind,
    reads_json,
)
from common.expr.leafindex import LeafIndex
from common.expr.semantics import MISSING
from common.expr.text_predicates import text_match_mask

ArrowValue: TypeAlias = pa.Array | pa.Scalar

_ARROW_COMPARE = {
    CompareOp.EQ: pc.equal,
    CompareOp.LT: pc.less,
    CompareOp.LE: pc.less_equal,
    CompareOp.GT: pc.greater,
    CompareOp.GE: pc.greater_equal,
}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NULL_BOOL = pa.scalar(None, pa.bool_())


def evaluate(expr: Expr, table: pa.Table | pa.RecordBatch, *, indexes: LeafIndex | None = None) -> np.ndarray:
    """Evaluate ``expr`` on every row of ``table``.

    Only the columns named by :func:`referenced_fields` are read; any other
    column (``_ts``, vectors) is ignored and may be absent.

    Args:
        expr: A filter from :func:`parse_filter`.
        table: A table or record batch with one column per schema field, typed as
            ``FieldSchema.arrow_type()``; JSON and ``$meta`` hold JSON text.
        indexes: Scalar indexes over ``table``'s rows (``leafindex.py``): a leaf they cover reads
            no column but for its null mask.

    Returns:
        A ``bool`` numpy array of length ``table.num_rows``; rows where the
        filter is unknown (nulls) are ``False``.

    Raises:
        IllegalFilter: A column the filter reads is missing from ``table``
            (a missing dynamic field reads as all null).
    """
    result = _eval(_Context(table, indexes), expr)
    return np.asarray(pc.fill_null(result, False).to_numpy(zero_copy_only=False), dtype=bool)


class _Context:
    """Per-evaluation caches of columns, null masks and parsed JSON values."""

    def __init__(self, table: pa.Table | pa.RecordBatch, indexes: LeafIndex | None = None) -> None:
        self.table = table
        self.indexes = indexes
        self.num_rows: int = table.num_rows
        self._columns: dict[str, pa.Array] = {}
        self._null_masks: dict[str, pa.Array | None] = {}
        self._docs: dict[str, list[Any]] = {}
        self._paths: dict[tuple[str, tuple[str | int, ...]], list[Any]] = {}
        self._elements: dict[tuple[str, int], tuple[pa.Array, pa.Array]] = {}

    def column(self, name: str, *, dynamic: bool = False) -> pa.Array:
        column = self._columns.get(name)
        if column is None:
            if name in self.table.column_names:
                column = self.table.column(name)
                if isinstance(column, pa.ChunkedArray):
                    column = column.combine_chunks()
            elif dynamic:
                column = pa.nulls(self.num_rows, pa.string())
            else:
                raise IllegalFilter(f"column '{name}' read by the filter is missing from the data")
            self._columns[name] = column
        return column

    def null_mask(self, name: str) -> pa.Array | None:
        if name not in self._null_masks:
            column = self.column(name)
            self._null_masks[name] = pc.is_null(column) if column.null_count else None
        return self._null_masks[name]

    def element(self, node: ArrayElement) -> tuple[pa.Array, pa.Array]:
        """``a[i]`` per row (null where absent) and where it is present (``bool``, no nulls).

        A null array has no elements; its rows are unknown anyway.
        """
        key = (node.array.name, node.index)
        cached = self._elements.get(key)
        if cached is None:
            column = self.column(node.array.name)
            offsets = column.offsets.to_numpy()
            lengths = np.diff(offsets)
            present = (lengths > node.index) & column.is_valid().to_numpy(zero_copy_only=False)
            element_type = column.type.value_type
            if not present.any():  # also keeps a huge index out of the arithmetic below
                values = pa.nulls(self.num_rows, element_type)
            else:
                # Offsets point into the unsliced ``values`` of a (maybe sliced) list array.
                positions = np.where(present, offsets[:-1].astype(np.int64) + node.index, 0)
                values = column.values.take(pa.array(positions, mask=~present))
            cached = self._elements[key] = (values, pa.array(present, type=pa.bool_()))
        return cached

    def json_values(self, path: JsonPath) -> list[Any]:
        key = (path.field, path.keys)
        values = self._paths.get(key)
        if values is None:
            docs = self._docs.get(path.field)
            if docs is None:
                texts = self.column(path.field, dynamic=path.dynamic).to_pylist()
                docs = self._docs[path.field] = [semantics.parse_json(t) for t in texts]
            values = self._paths[key] = [semantics.extract(d, path.keys) for d in docs]
        return values


def _bools(values: Iterable[bool]) -> pa.Array:
    return pa.array(list(values), type=pa.bool_())


def _eval(ctx: _Context, expr: Expr) -> pa.Array:
    match expr:
        case Const():
            return pa.array(np.full(ctx.num_rows, expr.value, dtype=bool))
        case Not():
            return pc.invert(_eval(ctx, expr.operand))
        case And():
            return functools.reduce(pc.and_kleene, (_eval(ctx, o) for o in expr.operands))
        case Or():
            return functools.reduce(pc.or_kleene, (_eval(ctx, o) for o in expr.operands))
        case IsNull():
            return _is_null(ctx, expr)
        case TextMatch():
            indexed = ctx.indexes.leaf(expr) if ctx.indexes is not None else None  # a sealed segment's own index
            if indexed is not None:
                return pa.array(indexed)
            name = expr.field.name  # the chunks as stored: each has its token index
            return text_match_mask(ctx.table.column(name) if name in ctx.table.column_names else ctx.column(name), expr)
        case Compare() | InList() | Like() | JsonContains() | Exists():
            indexed = ctx.indexes.leaf(expr) if ctx.indexes is not None else None
            result = pa.array(indexed) if indexed is not None else pc.fill_null(_leaf(ctx, expr), False)
            for element in set(iter_elements(expr)):
                result = pc.and_(result, ctx.element(element)[1])
            unknown = _unknown_mask(ctx, expr)
            return result if unknown is None else pc.if_else(unknown, _NULL_BOOL, result)
        case _:
            assert_never(expr)


def _unknown_mask(ctx: _Context, expr: Expr) -> pa.Array | None:
    """Rows where a column ``expr`` reads is null (the dynamic field excepted)."""
    names = set()
    for column in iter_columns(expr):
        if isinstance(column, FieldRef | ArrayRef):
            names.add(column.name)
        elif not column.dynamic:
            names.add(column.field)
    masks = [m for m in (ctx.null_mask(n) for n in sorted(names)) if m is not None]
    return functools.reduce(pc.or_, masks) if masks else None


def _leaf(ctx: _Context, expr: Compare | InList | Like | JsonContains | Exists) -> pa.Array:
    match expr:
        case Compare():
            return _compare(ctx, expr)
        case InList():
            return _in_list(ctx, expr)
        case Like():
            # Arrow's fast paths for `%abc%`-shaped patterns ignore backslash
            # escapes, so escaped patterns take the (rarer) row-wise path.
            if "\\" not in expr.pattern and not reads_json(expr.operand):
                return pc.match_like(_arrow(ctx, expr.operand), pattern=expr.pattern)
            regex = semantics.like_regex(expr.pattern)
            rows = _rows(ctx, expr.operand)
            return _bools(isinstance(v, str) and regex.fullmatch(v) is not None for v in rows)
        case JsonContains():
            if isinstance(expr.path, ArrayRef):
                return _array_contains(ctx, expr.path, expr.mode, expr.values)
            return _bools(_contains(expr, v) for v in ctx.json_values(expr.path))
        case Exists():
            return _bools(v is not MISSING for v in ctx.json_values(expr.path))
        case _:
            assert_never(expr)


def _is_null(ctx: _Context, expr: IsNull) -> pa.Array:
    operand = expr.operand
    if isinstance(operand, FieldRef | ArrayRef):
        return pc.is_null(ctx.column(operand.name))
    if not operand.keys:
        return pc.is_null(ctx.column(operand.field, dynamic=operand.dynamic))
    return _bools(v is MISSING or v is None for v in ctx.json_values(operand))


def _compare(ctx: _Context, expr: Compare) -> pa.Array:
    if reads_json(expr):
        left, right = _rows(ctx, expr.left), _rows(ctx, expr.right)
        return _bools(semantics.compare(expr.op, a, b) for a, b in zip(left, right, strict=True))
    if isinstance(expr.left, ArrayRef) or isinstance(expr.right, ArrayRef):
        array, other = (expr.left, expr.right) if isinstance(expr.left, ArrayRef) else (expr.right, expr.left)
        # The binder allows only `a == [..]` and `a != [..]` on a whole array.
        assert isinstance(array, ArrayRef) and isinstance(other, ListLiteral)
        equal = _array_equal(ctx, array, other.values)
        return pc.invert(equal) if expr.op is CompareOp.NE else equal
    left_value, right_value = _mixed(_arrow(ctx, expr.left), _arrow(ctx, expr.right))
    if expr.op is CompareOp.NE:
        return pc.invert(pc.fill_null(pc.equal(left_value, right_value), False))
    return _ARROW_COMPARE[expr.op](left_value, right_value)


def _in_list(ctx: _Context, expr: InList) -> pa.Array:
    if reads_json(expr.operand):
        value_set = semantics.ValueSet(expr.values)
        return _bools(v in value_set for v in _rows(ctx, expr.operand))
    values, value_set = _hashable(_arrow(ctx, expr.operand), operand_kind(expr.operand), expr.values)
    return pc.is_in(values, value_set=value_set)


def _hashable(values: ArrowValue, kind: ValueKind, wanted: Iterable[Any]) -> tuple[ArrowValue, pa.Array]:
    """``values`` and ``wanted`` in one Arrow type whose hashing matches ``==``.

    ``values`` hold ``kind``; ``wanted`` are constants the binder found comparable.
    """
    constants: list[Any] = list(wanted)
    match kind:
        case ValueKind.STRING:
            value_type = pa.string()
        case ValueKind.BOOL:
            value_type = pa.bool_()
        case _:
            all_int64 = all(isinstance(v, int) and _INT64_MIN <= v <= _INT64_MAX for v in constants)
            if all_int64 and pa.types.is_integer(values.type):
                value_type = pa.int64()
                values = values.cast(value_type)
            else:
                # is_in hashes bits, so -0.0 would miss 0.0; adding 0.0 folds
                # -0.0 into 0.0 and leaves every other value as it is.
                value_type = pa.float64()
                values = pc.add(_to_float(values), 0.0)
                constants = [float(v) + 0.0 for v in constants]
    return values, pa.array(constants, type=value_type)


def _flatten(column: pa.ListArray) -> tuple[pa.Array, np.ndarray]:
    """Every element of ``column`` and the row each belongs to.

    Null rows keep whatever elements back them; callers mask those rows.
    """
    offsets = column.offsets.to_numpy()
    start = int(offsets[0])
    values = column.values.slice(start, int(offsets[-1]) - start)
    rows = np.repeat(np.arange(len(column)), np.diff(offsets))
    return values, rows


def _array_contains(ctx: _Context, array: ArrayRef, mode: ContainsMode, wanted: tuple[Any, ...]) -> pa.Array:
    """``array_contains*`` on an ARRAY column, over its flattened elements."""
    kind = field_kind(array.element_type)
    assert kind is not None
    elements, rows = _flatten(ctx.column(array.name))
    values, value_set = _hashable(elements, kind, wanted)
    found = np.zeros(ctx.num_rows, dtype=bool)
    match mode:
        case ContainsMode.ONE | ContainsMode.ANY:
            hits = pc.is_in(values, value_set=value_set).to_numpy(zero_copy_only=False)
            found[rows[hits]] = True
        case ContainsMode.ALL:
            distinct = value_set.unique()
            positions = pc.index_in(values, value_set=distinct)
            hit = positions.is_valid().to_numpy(zero_copy_only=False)
            # A row holds all wanted values iff it holds len(distinct) distinct (row, value) pairs.
            pairs = np.unique(rows[hit] * len(distinct) + pc.fill_null(positions, 0).to_numpy()[hit])
            counts = np.bincount(pairs // max(len(distinct), 1), minlength=ctx.num_rows)
            found = counts == len(distinct)
        case _:
            assert_never(mode)
    return pa.array(found, type=pa.bool_())


def _array_equal(ctx: _Context, array: ArrayRef, wanted: tuple[Any, ...]) -> pa.Array:
    """``a == [..]``: the same length, and equal at each position."""
    lengths = pc.list_value_length(ctx.column(array.name))
    result = pc.fill_null(pc.equal(lengths, len(wanted)), False)
    for index, value in enumerate(wanted):
        element, _ = ctx.element(ArrayElement(array=array, index=index))
        result = pc.and_(result, pc.fill_null(pc.equal(element, _arrow(ctx, Literal(value=value))), False))
    return result


def _contains(expr: JsonContains, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    match expr.mode:
        case ContainsMode.ONE:
            return any(semantics.json_equal(e, expr.values[0]) for e in value)
        case ContainsMode.ANY:
            wanted = semantics.ValueSet(expr.values)
            return any(e in wanted for e in value)
        case ContainsMode.ALL:
            present = semantics.ValueSet(value)
            return all(w in present for w in expr.values)
        case _:
            assert_never(expr.mode)


# ------------------------------------------------------------- operands


def _rows(ctx: _Context, operand: Operand) -> list[Any]:
    """``operand`` as one Python value per row (``MISSING`` where absent)."""
    match operand:
        case Literal():
            return [operand.value] * ctx.num_rows
        case ListLiteral():
            return [operand.values] * ctx.num_rows
        case FieldRef():
            return list(ctx.column(operand.name).to_pylist())
        case JsonPath():
            return ctx.json_values(operand)
        case ArrayRef():
            return [MISSING if v is None else v for v in ctx.column(operand.name).to_pylist()]
        case ArrayElement():
            return [MISSING if v is None else v for v in ctx.element(operand)[0].to_pylist()]
        case ArrayLength():
            if isinstance(operand.path, ArrayRef):
                return [MISSING if v is None else v for v in _arrow(ctx, operand).to_pylist()]
            return [len(v) if isinstance(v, list) else MISSING for v in ctx.json_values(operand.path)]
        case Arith():
            left, right = _rows(ctx, operand.left), _rows(ctx, operand.right)
            return [semantics.arith(operand.op, a, b) for a, b in zip(left, right, strict=True)]
        case _:
            assert_never(operand)


def _arrow(ctx: _Context, operand: Operand) -> ArrowValue:
    """``operand`` (reading no JSON) as an Arrow array or scalar."""
    match operand:
        case Literal():
            value = operand.value
            if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
                return pa.scalar(float(value))
            return pa.scalar(value)
        case FieldRef():
            return ctx.column(operand.name)
        case ArrayElement():
            return ctx.element(operand)[0]
        case ArrayLength(path=ArrayRef() as array):
            return pc.list_value_length(ctx.column(array.name))
        case Arith():
            left, right = _arrow(ctx, operand.left), _arrow(ctx, operand.right)
            return _arrow_arith(operand.op, _widen(left), _widen(right), ctx.num_rows)
        case ListLiteral() | JsonPath() | ArrayRef() | ArrayLength():
            raise TypeError(f"{type(operand).__name__} has no Arrow evaluation")
        case _:
            assert_never(operand)


def _widen(value: ArrowValue) -> ArrowValue:
    """Integers to int64 and floats to float64, so arithmetic cannot narrow."""
    if pa.types.is_integer(value.type) and value.type != pa.int64():
        return value.cast(pa.int64())
    if pa.types.is_floating(value.type) and value.type != pa.float64():
        return value.cast(pa.float64())
    return value


def _zero_to_null(value: ArrowValue) -> ArrowValue:
    return pc.if_else(pc.equal(value, 0), pa.scalar(None, value.type), value)


def _to_float(value: ArrowValue) -> ArrowValue:
    """As float64; integers beyond 2**53 round to the nearest double, as in Milvus (Arrow's safe
    cast refuses them)."""
    return value.cast(pa.float64(), safe=False) if pa.types.is_integer(value.type) else value.cast(pa.float64())


def _mixed(left: ArrowValue, right: ArrowValue) -> tuple[ArrowValue, ArrowValue]:
    """An integer operand next to a floating one becomes float64 first."""
    if pa.types.is_integer(left.type) and pa.types.is_floating(right.type):
        return _to_float(left), right
    if pa.types.is_floating(left.type) and pa.types.is_integer(right.type):
        return left, _to_float(right)
    return left, right


def _arrow_arith(op: ArithOp, left: ArrowValue, right: ArrowValue, num_rows: int) -> ArrowValue:
    left, right = _mixed(left, right)
    both_int = pa.types.is_integer(left.type) and pa.types.is_integer(right.type)
    match op:
        case ArithOp.ADD:
            return pc.add(left, right)
        case ArithOp.SUB:
            return pc.subtract(left, right)
        case ArithOp.MUL:
            return pc.multiply(left, right)
        case ArithOp.DIV:
            return pc.divide(left, _zero_to_null(right))
        case ArithOp.MOD if both_int:
            right = _zero_to_null(right)
            return pc.subtract(left, pc.multiply(pc.divide(left, right), right))
        case ArithOp.MOD:
            return _float_fmod(left, _zero_to_null(right), num_rows)
        case ArithOp.POW:
            return pc.power(_to_float(left), _to_float(right))
        case _:
            assert_never(op)


def _float_fmod(left: ArrowValue, right: ArrowValue, num_rows: int) -> pa.Array:
    """C ``fmod`` (the dividend's sign), which Arrow lacks, through numpy."""
    arrays = [(v if isinstance(v, pa.Array) else pa.repeat(v, num_rows)).cast(pa.float64()) for v in (left, right)]
    a, b = (pc.fill_null(x, 0.0).to_numpy(zero_copy_only=False) for x in arrays)
    null = pc.or_(pc.is_null(arrays[0]), pc.is_null(arrays[1])).to_numpy(zero_copy_only=False)
    with np.errstate(all="ignore"):
        return pa.array(np.fmod(a, b), mask=null)
