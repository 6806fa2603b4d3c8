"""A ``fixed_size_binary`` vector column as a numpy matrix and back, without copying.

``BINARY_VECTOR`` (uint8 codes) and the narrow types (float16, bfloat16 bits,
int8) are all stored as ``fixed_size_binary[code_size]``: one value buffer of
``rows * code_size`` bytes, read here as a ``(rows, width)`` matrix of the
element type and written back the same way.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def rows_of(column: pa.FixedSizeBinaryArray, element: np.dtype, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(n, width)`` rows of ``element`` (a view of the Arrow buffer when no row is null) and a
    validity mask; null rows become zeros. The caller has checked the column's type."""
    n = len(column)
    if n == 0:
        return np.empty((0, width), dtype=element), np.ones(0, dtype=bool)
    code_size = width * element.itemsize
    flat = np.frombuffer(column.buffers()[1], dtype=element, count=n * width, offset=column.offset * code_size)
    rows = flat.reshape(n, width)
    if column.null_count == 0:
        return rows, np.ones(n, dtype=bool)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    rows = rows.copy()
    rows[~valid] = 0
    return rows, valid


def as_arrow(matrix: np.ndarray, valid: np.ndarray, code_size: int) -> pa.FixedSizeBinaryArray:
    """``matrix``'s rows as a ``fixed_size_binary[code_size]`` column (zero-copy when contiguous),
    null where ``valid`` is false."""
    codes = np.ascontiguousarray(matrix)
    mask = None if valid.all() else pa.array(valid).buffers()[1]
    array = pa.FixedSizeBinaryArray.from_buffers(pa.binary(code_size), len(codes), [mask, pa.py_buffer(codes)])
    assert isinstance(array, pa.FixedSizeBinaryArray)
    return array
