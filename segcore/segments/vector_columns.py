"""A growing segment's vector columns, one kind per vector type, and how rows get into one.

``vector_column`` makes the column of a field; ``decoded`` checks and decodes a batch's
values for a column first and appends them later, so a store decodes every column of an
insert before it changes any (a bad value leaves the store as it was).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from common.schema import DataType, FieldSchema
from segcore.segments.binary_vectors import BinaryVectorColumn
from segcore.segments.narrow_vectors import NarrowVectorColumn
from segcore.segments.sparse_vectors import SparseVectorColumn
from segcore.segments.vectors import VectorColumn

AnyVectorColumn = VectorColumn | BinaryVectorColumn | SparseVectorColumn | NarrowVectorColumn


def vector_column(f: FieldSchema) -> AnyVectorColumn:
    if f.dtype == DataType.FLOAT_VECTOR:
        return VectorColumn(f.dim)
    if f.dtype == DataType.BINARY_VECTOR:
        return BinaryVectorColumn(f.dim)
    if f.dtype == DataType.SPARSE_FLOAT_VECTOR:
        return SparseVectorColumn()
    if f.dtype.is_narrow_vector:
        return NarrowVectorColumn(f.dtype, f.dim)
    raise ValueError(f"vector field {f.name}: {f.dtype.name} is not supported")


def decoded(column: AnyVectorColumn, values: pa.Array) -> Callable[[], None]:
    """Decode ``values`` for ``column`` now (``ValueError`` on bad input); the call returned appends them."""
    if isinstance(column, SparseVectorColumn):
        sparse, valid = SparseVectorColumn.decode(values)
        return partial(column.append, sparse, valid)
    if isinstance(column, NarrowVectorColumn):
        rows, valid = column.decode(values)
    elif isinstance(column, BinaryVectorColumn):
        rows, valid = BinaryVectorColumn.decode(values, column.code_size)
    else:
        rows, valid = VectorColumn.decode(values, column.dim)
    return partial(column.append, rows, valid)
