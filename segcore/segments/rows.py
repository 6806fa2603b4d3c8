"""Scalar columns of a growing store as a short list of Arrow chunks.

Insert batches are appended as chunks and neighbouring chunks are merged
log-structured style (a chunk is merged into its predecessor unless the
predecessor is more than twice as large), so there are ``O(log n)`` chunks and
each row is copied ``O(log n)`` times over the store's life.

Few chunks matter because pyarrow's ``take`` on a chunked column concatenates
the whole column first; :meth:`ChunkedRows.take` instead takes from each
chunk that holds a wanted row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa


class ChunkedRows:
    """Append-only Arrow rows with cheap random access."""

    __slots__ = ("_chunks", "_num_rows", "_schema", "_starts")

    def __init__(self, schema: pa.Schema) -> None:
        self._schema = schema
        self._chunks: list[pa.Table] = []
        self._starts: list[int] = []  # first row of each chunk
        self._num_rows = 0

    @property
    def num_rows(self) -> int:
        return self._num_rows

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def append(self, batch: pa.Table) -> None:
        """Append ``batch`` (exactly this store's schema)."""
        if batch.num_rows == 0:
            return
        self._chunks.append(batch.combine_chunks())
        self._starts.append(self._num_rows)
        self._num_rows += batch.num_rows
        while len(self._chunks) >= 2 and (
            self._chunks[-2].num_rows <= 2 * self._chunks[-1].num_rows
        ):
            newer = self._chunks.pop()
            self._starts.pop()
            self._chunks[-1] = pa.concat_tables([self._chunks[-1], newer]).combine_chunks()

    def add_columns(self, schema: pa.Schema, fill: Callable[[str, int], pa.Array]) -> None:
        """Take ``schema``: this store's columns plus new ones, which every stored row gets as
        ``fill(name, rows)`` (a field added to the collection: its default value, or nulls)."""
        added = [f.name for f in schema if self._schema.get_field_index(f.name) < 0]
        self._chunks = [
            pa.Table.from_arrays(
                [chunk.column(f.name) if f.name not in added else fill(f.name, chunk.num_rows) for f in schema],
                schema=schema,
            )
            for chunk in self._chunks
        ]
        self._schema = schema

    def table(self) -> pa.Table:
        """All rows (zero-copy over the chunks)."""
        if not self._chunks:
            return self._schema.empty_table()
        return pa.concat_tables(self._chunks)

    def take(self, rows: np.ndarray, columns: Sequence[str]) -> pa.Table:
        """Rows at positions ``rows`` (any order, repeats allowed) of ``columns``."""
        schema = pa.schema([self._schema.field(name) for name in columns])
        if len(rows) == 0:
            return schema.empty_table()
        order: np.ndarray | None = None  # None: ``rows`` is already ascending
        sorted_rows = rows
        if np.any(rows[1:] < rows[:-1]):
            order = np.argsort(rows, kind="stable")
            sorted_rows = rows[order]
        chunk_ids = np.searchsorted(np.asarray(self._starts), sorted_rows, side="right") - 1
        cuts = np.flatnonzero(np.diff(chunk_ids)) + 1
        parts = []
        for lo, hi in zip(
            np.concatenate([[0], cuts]), np.concatenate([cuts, [len(rows)]]), strict=True
        ):
            chunk_id = int(chunk_ids[lo])
            local = sorted_rows[lo:hi] - self._starts[chunk_id]
            parts.append(self._chunks[chunk_id].select(list(columns)).take(local))
        gathered = pa.concat_tables(parts).combine_chunks()
        if order is None:
            return gathered
        inverse = np.empty_like(order)
        inverse[order] = np.arange(len(order))
        return gathered.take(inverse)
