"""Sparse float vectors in import files, as Milvus' bulk import takes them, to Strata's stored form.

A row may come as:

* JSON (a ``.json``/``.jsonl`` row, or a Parquet ``string`` column): an object
  of index -> value (``{"1": 0.5, "7": 0.25}``) or the pair of lists
  ``{"indices": [1, 7], "values": [0.5, 0.25]}``, Milvus' two sparse JSON forms;
* Parquet ``struct<indices: list<integer>, values: list<float>>``;
* Parquet ``binary``: the packed pairs Strata and Milvus store (little-endian
  uint32 index, float32 value).

Every row is checked as an insert is (index below 2^32-1, unique, values
finite and not negative; an empty row is fine) and stored as Arrow ``binary``
with its pairs in ascending index order. Errors name the row.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from common.errors import InvalidArgument
from segcore.segments.sparse_rows import SparseRows, canonical_row, check_rows, rows_from_bytes, rows_from_pairs


def sparse_type_fits(t: pa.DataType) -> bool:
    """A column type an import may hold sparse rows in."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return True
    return pa.types.is_struct(t) and {t.field(i).name for i in range(t.num_fields)} == {"indices", "values"}


def sparse_column(column: pa.Array) -> pa.Array:
    """A column of sparse rows in any accepted form as Arrow ``binary`` of canonical packed pairs."""
    if column.null_count:
        row = int(np.flatnonzero(~np.asarray(column.is_valid().to_numpy(zero_copy_only=False)))[0])
        raise InvalidArgument(f"null vector at row {row}")
    t = column.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        try:
            rows = rows_from_bytes([b for b in column.to_pylist()])
        except ValueError as err:
            raise InvalidArgument(str(err)) from None
    else:
        cells = column.to_pylist()
        if pa.types.is_struct(t):
            parsed = [_pair_lists(i, cell) for i, cell in enumerate(cells)]
        else:
            parsed = [_json_row(i, text) for i, text in enumerate(cells)]
        rows = rows_from_pairs(parsed)
    problem = check_rows(rows)
    if problem is not None:
        raise InvalidArgument(f"{problem} (row {_first_bad_row(rows)})")
    return rows.to_arrow()


def _json_row(row: int, text: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidArgument(f"the sparse vector at row {row} is not JSON: {text[:40]!r}") from None
    if isinstance(value, dict) and set(value) == {"indices", "values"}:
        return _pair_lists(row, value)
    if not isinstance(value, dict):
        raise InvalidArgument(f"the sparse vector at row {row} must be a JSON object, got {type(value).__name__}")
    try:
        indices = [int(k) for k in value]
    except ValueError:
        raise InvalidArgument(f"the sparse vector at row {row} has a key that is not an index") from None
    return _canonical(row, indices, list(value.values()))


def _pair_lists(row: int, cell: Any) -> tuple[np.ndarray, np.ndarray]:
    indices, values = cell.get("indices"), cell.get("values")
    if not isinstance(indices, list) or not isinstance(values, list) or len(indices) != len(values):
        raise InvalidArgument(f"the sparse vector at row {row} needs lists of indices and values of one length")
    return _canonical(row, indices, values)


def _canonical(row: int, indices: list[Any], values: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    if any(isinstance(i, bool) or not isinstance(i, int) for i in indices):
        raise InvalidArgument(f"the sparse vector at row {row} has an index that is not an integer")
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise InvalidArgument(f"the sparse vector at row {row} has a value that is not a number")
    try:
        return canonical_row(np.array(indices, dtype=np.int64), values)
    except (ValueError, OverflowError) as err:
        raise InvalidArgument(f"{err} (row {row})") from None


def _first_bad_row(rows: SparseRows) -> int:
    for i in range(len(rows)):
        if check_rows(rows.slice_rows(i, i + 1)) is not None:
            return i
    return -1
