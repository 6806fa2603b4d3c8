"""What a scalar index is built over: the values of its column, each with the row holding it.

* a scalar field: each non-null value, at its row;
* an ARRAY field: each element of each non-null array, at the array's row;
* a JSON path: the value at the path where it has the cast type (``BOOL``:
  a boolean; ``DOUBLE``: a number, booleans excluded; ``VARCHAR``: a
  string); ``ARRAY_*``: each element of that type of an array at the path.
  JSON values are read with the filter language's own parser and path rules
  (``common/expr/semantics.py``), so the index holds exactly the values a
  scan compares.
* ``json_cast_function`` ``STRING_TO_DOUBLE`` (DOUBLE only) also indexes the
  strings at the path that C++'s ``std::stod`` reads as a number, as Milvus
  does (``stod``: leading white space, then the longest prefix that is a
  decimal or hexadecimal number, ``inf`` or ``nan``; a string with no such
  prefix, or out of a double's range, is skipped). They are kept apart
  (``converted``): a filter compares a number with numbers only, so filters
  read ``values`` alone and their answers stay the scan's.

``exact`` is false when the values as indexed may compare differently from
the scan: integers beyond 2**53 cast to DOUBLE. The planner does not use such
an index (it still answers nothing wrong: it is not asked).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.expr import semantics
from segcore.index.scalar.spec import JsonCast, ScalarIndexSpec

_EXACT_INT = 2**53


@dataclass(frozen=True, slots=True)
class IndexSource:
    values: pa.Array
    rows: np.ndarray
    exact: bool = True
    converted: tuple[pa.Array, np.ndarray] | None = None  # a cast function's values from strings, and their rows


def _column(table: pa.Table, name: str) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows, pa.string())
    column = table.column(name)
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def index_source(spec: ScalarIndexSpec, table: pa.Table) -> IndexSource:
    """The values ``spec`` indexes in ``table`` (every row of a segment)."""
    column = _column(table, spec.field_name)
    if spec.json_path is not None:
        return _json_source(spec, column)
    valid = np.asarray(column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        offsets = column.offsets.to_numpy()
        lengths = np.where(valid, np.diff(offsets), 0)
        parents = np.repeat(np.arange(len(column), dtype=np.int64), lengths)
        keep = np.repeat(valid, np.diff(offsets))
        start = int(offsets[0])
        elements = column.values.slice(start, int(offsets[-1]) - start)
        if not keep.all():
            elements = elements.filter(pa.array(keep))
        return IndexSource(values=elements, rows=parents)
    rows = np.flatnonzero(valid).astype(np.int64)
    values = column if column.null_count == 0 else pc.drop_null(column)
    return IndexSource(values=values, rows=rows)


def _cast(cast: JsonCast, value: Any) -> Any:
    """``value`` as ``cast`` reads it, or ``None`` when it has another type."""
    match cast:
        case JsonCast.BOOL:
            return value if isinstance(value, bool) else None
        case JsonCast.VARCHAR:
            return value if isinstance(value, str) else None
        case _:
            return value if semantics.is_number(value) else None


#: The longest prefix ``std::stod`` (``strtod``) reads, after leading white space.
_STOD = re.compile(
    r"[ \t\n\v\f\r]*([+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN]))"
)


def string_to_double(text: str) -> float | None:
    """``STRING_TO_DOUBLE`` as Milvus applies it (``std::stod``): the number a string starts with, or
    ``None`` (no number there, or beyond a double's range, where ``stod`` throws)."""
    match = _STOD.match(text)
    if match is None:
        return None
    token = match.group(1)
    body = token.lstrip("+-")
    sign = -1.0 if token.startswith("-") else 1.0
    if body[:1].isalpha() and body[:2].lower() != "0x":  # inf, infinity, nan: no range error
        return sign * float(body)
    try:
        if body[:2].lower() == "0x":
            mantissa, _, exponent = body[2:].lower().partition("p")
            whole, _, fraction = mantissa.partition(".")
            value = math.ldexp(float(int(whole + fraction, 16)), int(exponent or 0) - 4 * len(fraction))
        else:
            value = float(body)
    except OverflowError:
        return None
    nonzero = any(c not in "0." for c in body.lower().split("e")[0].split("p")[0].removeprefix("0x"))
    if math.isinf(value) or (nonzero and abs(value) < sys.float_info.min):
        return None  # overflow, or underflow to a subnormal or zero: ERANGE, stod throws
    return sign * value


def _to_float(value: int | float) -> float:
    if isinstance(value, int) and abs(value) > 1e308:  # beyond any double: its sign's infinity
        return math.copysign(math.inf, value)
    return float(value)


def _json_source(spec: ScalarIndexSpec, column: pa.Array) -> IndexSource:
    path, cast = spec.json_path, spec.json_cast
    assert path is not None and cast is not None
    element = cast.element if cast.is_array else cast
    values: list[Any] = []
    rows: list[int] = []
    converted: list[float] = []
    converted_rows: list[int] = []
    for row, text in enumerate(column.to_pylist()):
        value = semantics.extract(semantics.parse_json(text), path.keys)
        if cast.is_array:
            if not isinstance(value, list):
                continue
            for item in value:
                cast_item = _cast(element, item)
                if cast_item is not None:
                    values.append(cast_item)
                    rows.append(row)
            continue
        cast_value = _cast(element, value)
        if cast_value is not None:
            values.append(cast_value)
            rows.append(row)
        elif spec.json_cast_function and isinstance(value, str):
            number = string_to_double(value)
            if number is not None:
                converted.append(number)
                converted_rows.append(row)
    exact = True
    match element:
        case JsonCast.BOOL:
            arrow = pa.array(values, type=pa.bool_())
        case JsonCast.VARCHAR:
            arrow = pa.array(values, type=pa.string())
        case _:
            exact = all(isinstance(v, float) or -_EXACT_INT <= v <= _EXACT_INT for v in values)
            arrow = pa.array([_to_float(v) for v in values], type=pa.float64())
    extra = None
    if spec.json_cast_function:
        extra = (pa.array(converted, type=pa.float64()), np.asarray(converted_rows, dtype=np.int64))
    return IndexSource(values=arrow, rows=np.asarray(rows, dtype=np.int64), exact=exact, converted=extra)
