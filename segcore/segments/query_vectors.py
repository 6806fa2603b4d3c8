"""A search's query vectors as bytes, where the search crosses gRPC (``querynode.proto``
``SearchRequest.vectors``): float vectors as little-endian float32 rows, binary codes (uint8)
as they are, sparse ones as a padded batch of pairs (``sparse_rows.queries_to_bytes``).
In one process the matrix is handed on as it is."""

from __future__ import annotations

import numpy as np

from common.errors import InvalidArgument
from common.schema import FieldSchema
from segcore.segments.sparse_rows import PAIR, queries_from_bytes, queries_to_bytes


def encode_queries(vectors: np.ndarray) -> bytes:
    if vectors.dtype == PAIR:  # sparse: a padded batch of (index, value) pairs
        return queries_to_bytes(vectors)
    if vectors.dtype == np.uint8:
        return np.ascontiguousarray(vectors).tobytes()
    return np.ascontiguousarray(vectors, dtype="<f4").tobytes()


def decode_queries(raw: bytes, field: FieldSchema) -> np.ndarray:
    """The query vectors ``encode_queries`` wrote, row after row, for ``field``; raises
    ``InvalidArgument`` when they do not fit its width."""
    if field.dtype.is_sparse_vector:
        try:
            return queries_from_bytes(raw)
        except ValueError as err:
            raise InvalidArgument(str(err)) from None
    if field.dtype.is_binary_vector:
        width = field.code_size
        if width <= 0 or len(raw) % width:
            raise InvalidArgument(f"search vectors of {len(raw)} bytes are not a whole number of {width}-byte codes")
        return np.frombuffer(raw, dtype=np.uint8).reshape(-1, width).copy()
    dim = field.dim
    if dim <= 0 or len(raw) % (4 * dim):
        raise InvalidArgument(f"search vectors of {len(raw)} bytes are not a whole number of {dim}-dim float32 rows")
    return np.frombuffer(raw, dtype="<f4").reshape(-1, dim).astype(np.float32)  # a writable copy
