"""One sealed segment on a worker: rows with MVCC, PK stats, and a vector index per indexed field.

Rows live in the same structure as growing data (``GrowingStore``: Arrow
columns, each vector field one float32 matrix or, binary, one uint8 matrix of
codes, validity intervals per row);
cuts forwarded by the delegator end versions in it. A search computes the
rows that may be returned, visible at the read timestamp and matching the
filter, as one bitset, and hands it to the field's index, which applies it
during the search (``segcore/index``). A field without an index is searched
exactly. Not thread-safe: the worker serialises writes (cuts) and reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from common.segment import SegmentMeta
from common.storage.stats import SegmentStats
from segcore.index.base import SearchParams, VectorIndex
from segcore.index.factory import IndexSpec, build_index
from segcore.index.scalar.index import ScalarIndex
from segcore.index.scalar.planner import IndexedFilter, TextIndexed
from segcore.index.scalar.spec import ScalarIndexSpec
from segcore.index.sparse_exact import exact_sparse_index
from segcore.index.text.index import TextIndex
from segcore.segments.growing import GrowingStore
from segcore.segments.metric import parse_metric


@dataclass(slots=True)
class FieldIndex:
    spec: IndexSpec
    index: VectorIndex
    index_id: int  # the catalog's id of the index (GetDataDistribution reports it)


@dataclass(slots=True)
class WorkerSegment:
    meta: SegmentMeta
    store: GrowingStore
    stats: list[SegmentStats]
    indexes: dict[str, FieldIndex] = field(default_factory=dict)
    scalar_indexes: dict[int, ScalarIndex] = field(default_factory=dict)  # by catalog index id
    text_indexes: dict[str, TextIndexed] = field(default_factory=dict)  # by field: analyzer params, text-match index
    _filter: IndexedFilter | None = None

    @property
    def segment_id(self) -> int:
        return self.meta.segment_id

    @property
    def num_rows(self) -> int:
        return self.store.num_rows

    def index_for(self, field_name: str, metric: str) -> VectorIndex | None:
        """The field's index when it was built for ``metric``; None: search exactly."""
        fi = self.indexes.get(field_name)
        return fi.index if fi is not None and parse_metric(fi.spec.metric) == parse_metric(metric) else None

    def has_index(self, field_name: str, index_id: int, spec: IndexSpec | ScalarIndexSpec) -> bool:
        """Whether the index is in place (a vector field holds one index; a scalar index is by id)."""
        if isinstance(spec, ScalarIndexSpec):
            return index_id in self.scalar_indexes
        return field_name in self.indexes

    def put_index(self, field_name: str, built: FieldIndex | ScalarIndex, index_id: int) -> None:
        if isinstance(built, ScalarIndex):
            self.scalar_indexes[index_id] = built
            self._filter = None
        else:
            self.indexes[field_name] = built

    def put_text_index(self, field_name: str, analyzer_params: str, index: TextIndex) -> None:
        """The field's text-match index (``segcore/index/text``): ``TEXT_MATCH`` / ``PHRASE_MATCH`` read it."""
        self.text_indexes[field_name] = (analyzer_params, index)
        self._filter = None

    def filter_indexes(self) -> IndexedFilter | None:
        """The scalar and text-match indexes as the filter evaluator uses them (None: none)."""
        if not self.scalar_indexes and not self.text_indexes:
            return None
        if self._filter is None:
            self._filter = IndexedFilter(self.scalar_indexes.values(), self.text_indexes)
        return self._filter

    def cut(self, pks: pa.Array, ts: np.ndarray) -> None:
        self.store.cut(pks, ts)

    def search(
        self,
        *,
        field_name: str,
        queries: np.ndarray,
        metric: str,
        topk: int,
        read_ts: int,
        mask: np.ndarray | None,
        params: SearchParams,
        output_fields: Sequence[str],
        threads: int = 1,
    ) -> pa.Table:
        """Top ``topk`` rows per query that are visible at ``read_ts`` and in ``mask``, best first
        (on up to ``threads`` threads: ``VectorIndex.search``)."""
        return search_rows(
            self.store,
            self.index_for(field_name, metric),
            field_name=field_name,
            queries=queries,
            metric=metric,
            topk=topk,
            read_ts=read_ts,
            mask=mask,
            params=params,
            output_fields=output_fields,
            threads=threads,
        )


def search_rows(
    store: GrowingStore,
    index: VectorIndex | None,
    *,
    field_name: str,
    queries: np.ndarray,
    metric: str,
    topk: int,
    read_ts: int,
    mask: np.ndarray | None,
    params: SearchParams,
    output_fields: Sequence[str],
    threads: int = 1,
) -> pa.Table:
    """Search ``store``'s rows with ``index`` (exact when None): one bitset of the rows that may be
    returned (visible at ``read_ts``, in ``mask``, vector not null), applied during the search."""
    allowed = store.selection(read_ts, mask)
    valid = store.vector_valid(field_name)
    if valid is not None:
        allowed = allowed & valid
    if store.num_rows == 0 or not allowed.any():
        empty = np.empty(0, dtype=np.int64)
        return store.hits_table(empty, empty, np.empty(0, np.float32), output_fields)
    if index is None and store.schema.field(field_name).dtype.is_sparse_vector:
        index = exact_sparse_index(store.vector_matrix(field_name), metric)
    if index is None:
        binary = store.schema.field(field_name).dtype.is_binary_vector
        exact = IndexSpec(index_type="BIN_FLAT" if binary else "FLAT", metric=metric, params={}, binary=binary)
        index = build_index(exact, store.vector_matrix(field_name))
    found = index.search(queries, topk, allowed=allowed, params=params, threads=threads)
    rows, dists = found.rows, found.distances
    query_idx = np.repeat(np.arange(len(queries), dtype=np.int32), rows.shape[1])
    hit = rows >= 0
    if hit.all():  # every query found topk rows: no empty slots to drop
        return store.hits_table(query_idx, rows.ravel(), dists.ravel(), output_fields)
    return store.hits_table(query_idx[hit.ravel()], rows[hit], dists[hit], output_fields)
