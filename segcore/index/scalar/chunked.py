"""Scalar indexes of a growing store: one small index per immutable Arrow chunk, built on first use.

A growing store keeps its scalar columns as a short list of Arrow chunks
(``segcore/segments/rows.py``): a chunk never changes, new rows arrive as new
chunks, and now and then neighbouring chunks are merged into a new one. So
the index of a collection's scalar index definition is built per chunk, the
first time a filter reads a column it covers, and kept while the chunk is in
the store; a merged chunk's index is built again on its first filter, and the
indexes of chunks the store no longer holds are dropped (``ChunkIndexes.view``
prunes them). As the ``TEXT_MATCH`` chunk index (``common/fulltext/text_index.py``),
a chunk is known by its buffers' addresses, offset and length, and each entry
holds the chunk so that the memory behind an address cannot be reused.

A chunk's index is an ordinary ``ScalarIndex`` built over the chunk's rows;
``ChunkedFilter`` asks each chunk's ``IndexedFilter`` (``planner.py``) and
concatenates the answers, so every leaf is answered exactly as on a sealed
segment, and a leaf that any chunk cannot answer (no index of its column, or
a JSON index whose values there are not exact) is scanned on the whole store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from common.expr.ast import ArrayRef, Expr, FieldRef, JsonPath, iter_columns
from segcore.index.scalar.index import ScalarIndex, build_scalar_index
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.scalar.spec import ScalarIndexSpec

_ChunkKey = tuple[object, ...]


def chunk_key(chunk: pa.Array) -> _ChunkKey:
    """What identifies an immutable Arrow chunk while it is alive."""
    buffers = tuple(b.address if b is not None else 0 for b in chunk.buffers())
    return (chunk.type.id, buffers, chunk.offset, len(chunk))


def _covers(spec: ScalarIndexSpec, column: object) -> bool:
    if isinstance(column, FieldRef | ArrayRef):
        return spec.json_path is None and spec.field_name == column.name
    if isinstance(column, JsonPath):
        path = spec.json_path
        return path is not None and path.field == column.field and path.keys == column.keys
    return False


class ChunkIndexes:
    """The per-chunk indexes of one growing store, for ``specs`` (thread-safe)."""

    def __init__(self, specs: Sequence[ScalarIndexSpec]) -> None:
        self.specs = tuple(specs)
        self._lock = threading.Lock()
        self._entries: dict[tuple[ScalarIndexSpec, _ChunkKey], tuple[pa.Array, ScalarIndex]] = {}
        self.builds = 0  # chunk indexes built so far (tests and logs read it)

    def __len__(self) -> int:
        return len(self._entries)

    def view(self, table: pa.Table) -> ChunkedFilter:
        """The indexes as a filter over ``table`` (the store's rows now); drops the indexes of chunks
        ``table`` no longer holds."""
        chunks: dict[str, list[pa.Array]] = {}
        for spec in self.specs:
            if spec.field_name in table.column_names and spec.field_name not in chunks:
                chunks[spec.field_name] = [c for c in table.column(spec.field_name).chunks if len(c)]
        live = {chunk_key(c) for found in chunks.values() for c in found}
        with self._lock:
            for key in [k for k in self._entries if k[1] not in live]:
                del self._entries[key]
        return ChunkedFilter(self, chunks, table.num_rows)

    def index(self, spec: ScalarIndexSpec, chunk: pa.Array) -> ScalarIndex:
        """``spec``'s index of ``chunk``: cached, or built now (outside the lock: a pass over the chunk)."""
        key = (spec, chunk_key(chunk))
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None:
            return hit[1]
        built = build_scalar_index(spec, pa.table({spec.field_name: chunk}))
        with self._lock:
            self._entries.setdefault(key, (chunk, built))
            self.builds += 1
        return built


@dataclass(frozen=True, slots=True)
class ChunkedFilter:
    """A growing store's rows as the filter evaluator asks indexes (``common/expr/leafindex.py``)."""

    indexes: ChunkIndexes
    chunks: dict[str, list[pa.Array]]  # the non-empty chunks of each indexed column, in row order
    num_rows: int

    def __bool__(self) -> bool:
        return bool(self.chunks)

    def _per_chunk(self, expr: Expr) -> list[IndexedFilter] | None:
        """One ``IndexedFilter`` per chunk with the indexes of the columns ``expr`` reads (built now
        when missing); ``None`` when some column it reads has no index (it would not be answered)."""
        columns = list(iter_columns(expr))
        specs = [s for s in self.indexes.specs if any(_covers(s, c) for c in columns)]
        if not specs or not all(any(_covers(s, c) for s in specs) for c in columns):
            return None
        lengths = {len(self.chunks.get(s.field_name, ())) for s in specs}
        if len(lengths) != 1 or not lengths.pop():
            return None  # no rows (or a column the table lacks): scanned
        per_chunk = zip(*(self.chunks[s.field_name] for s in specs), strict=True)
        return [
            IndexedFilter(self.indexes.index(s, c) for s, c in zip(specs, chunks, strict=True))
            for chunks in per_chunk
        ]

    def mask(self, expr: Expr) -> np.ndarray | None:
        """The whole filter from indexes alone (``IndexedFilter.mask`` per chunk), or ``None``."""
        return self._joined(expr, IndexedFilter.mask)

    def leaf(self, expr: Expr) -> np.ndarray | None:
        """One leaf per row, before null handling (``IndexedFilter.leaf`` per chunk), or ``None``."""
        return self._joined(expr, IndexedFilter.leaf)

    def _joined(
        self, expr: Expr, answer: Callable[[IndexedFilter, Expr], np.ndarray | None]
    ) -> np.ndarray | None:
        """``answer`` of every chunk's indexes, joined in row order; ``None`` if any chunk has none."""
        filters = self._per_chunk(expr)
        if filters is None:
            return None
        parts = []
        for chunk_filter in filters:
            part = answer(chunk_filter, expr)
            if part is None:
                return None
            parts.append(part)
        return np.concatenate(parts)
