"""The in-memory growing data of one vchannel: MVCC reads and exact search.

A :class:`GrowingStore` is owned by the vchannel's delegator, which applies
the vchannel's inserts and deletes in WAL (timestamp) order and reads at its
tsafe. Each store is plain data with no I/O; searches are CPU work the owner
should run off the event loop. It is not thread-safe: the owner must not let
a read overlap a write.

Pieces (one module each): ``mvcc`` (row validity intervals), ``pk_index``
(primary key -> code), ``rows`` (scalar columns as Arrow chunks),
``vectors`` (float32 matrix per float vector field), ``binary_vectors``
(uint8 matrix per binary vector field), ``sparse_vectors`` (a growing CSR
matrix per sparse float vector field), ``search`` (exact top-k), ``metric``
and ``binary_metric`` (distances).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType
from common.schema_evolution import added_fields, fill_column
from segcore.segments.binary_vectors import BinaryVectorColumn
from segcore.segments.keyorder import keys_ascend, ordered_mask, ordered_rows
from segcore.segments.metric import parse_metric
from segcore.segments.mvcc import VersionChains
from segcore.segments.narrow_vectors import NarrowVectorColumn
from segcore.segments.pk_index import make_pk_index
from segcore.segments.rows import ChunkedRows
from segcore.segments.search import Hits, exact_search
from segcore.segments.sparse_rows import SparseRows
from segcore.segments.sparse_vectors import SparseVectorColumn
from segcore.segments.vector_columns import AnyVectorColumn, decoded, vector_column
from segcore.segments.vectors import VectorColumn

#: Columns every search result starts with (besides the primary key).
QUERY_COLUMN = "query"
DISTANCE_COLUMN = "distance"

_MAX_TS = int(np.iinfo(np.uint64).max)
_MASK_CACHE_SIZE = 8


class GrowingStore:
    """Rows inserted into one vchannel and not yet served from sealed segments."""

    def __init__(self, schema: CollectionSchema) -> None:
        self._schema = schema
        self._pk = schema.primary_field
        self._arrow_schema = schema.arrow_schema()
        self._vectors: dict[str, AnyVectorColumn] = {}
        for f in schema.vector_fields:
            self._vectors[f.name] = vector_column(f)
        self._rows = ChunkedRows(
            pa.schema([f for f in self._arrow_schema if f.name not in self._vectors])
        )
        self._chains = VersionChains(make_pk_index(self._pk.dtype))
        self._table: pa.Table | None = None  # cached until the next insert
        self._int_pks: np.ndarray | None = None  # int64 primary keys in row order, cached likewise
        self._keys_ascend: bool | None = None  # whether they strictly increase with the row, likewise
        # The columns every search result table starts with.
        self._hits_fields = (
            pa.field(QUERY_COLUMN, pa.int32()),
            self._arrow_schema.field(self._pk.name),
            pa.field(DISTANCE_COLUMN, pa.float32()),
        )
        self._hits_schema = pa.schema(self._hits_fields)
        self._masks: dict[int, np.ndarray] = {}  # read_ts -> visible mask, until any write

    @property
    def schema(self) -> CollectionSchema:
        return self._schema

    @property
    def num_rows(self) -> int:
        """Rows stored (inserted), including deleted and superseded ones."""
        return self._chains.num_rows

    @property
    def high_water_ts(self) -> int:
        """Largest timestamp applied (insert or delete); 0 when nothing was."""
        return self._chains.high_water

    def apply_insert(self, table: pa.Table) -> None:
        """Store a batch of rows.

        ``table`` holds every column of ``schema.arrow_schema()`` (extra
        columns are ignored; types are cast when they differ). Timestamps must
        be non-decreasing and not below :attr:`high_water_ts`. On
        ``ValueError`` nothing was stored.
        """
        batch = self._conform(table)
        if batch.num_rows == 0:
            return
        pks = batch.column(self._pk.name).chunk(0)
        if pks.null_count:
            raise ValueError(f"primary key {self._pk.name} has null values")
        ts = batch.column(TIMESTAMP_COLUMN).chunk(0)
        if ts.null_count:
            raise ValueError(f"{TIMESTAMP_COLUMN} has null values")
        ts_values = ts.to_numpy(zero_copy_only=False).astype(np.uint64, copy=False)
        self._chains.check_append(ts_values)
        appends = [decoded(column, batch.column(name).chunk(0)) for name, column in self._vectors.items()]

        self._chains.append(pks, ts_values)
        for append in appends:
            append()
        self._rows.append(batch.select(self._rows.schema.names))
        self._table = None
        self._int_pks = None
        self._keys_ascend = None
        self._masks.clear()

    def add_fields(self, schema: CollectionSchema) -> None:
        """Take ``schema``, a later version of this store's with fields added (``AddCollectionField``):
        every row stored so far gets each added field's default value, or null
        (``common/schema_evolution.py``); later inserts carry the fields. Not for any other change
        of the schema (a field's type or dimension). CPU work proportional to the rows held."""
        added = added_fields(self._schema, schema)
        rows = self.num_rows
        for f in added:
            if f.dtype.is_vector:
                column = vector_column(f)
                if rows:
                    decoded(column, fill_column(f, rows))()
                self._vectors[f.name] = column
        self._schema = schema
        self._arrow_schema = schema.arrow_schema()
        self._rows.add_columns(
            pa.schema([f for f in self._arrow_schema if f.name not in self._vectors]),
            lambda name, n: fill_column(schema.field(name), n),
        )
        self._table = None

    def apply_delete(self, pks: pa.Array | pa.ChunkedArray, ts: int) -> None:
        """Delete keys ``pks`` at ``ts``: hides their versions with ``_ts < ts``.

        A version inserted at exactly ``ts`` stays visible (upsert = delete +
        insert at one timestamp). Keys with no stored row are ignored.
        """
        _check_ts(ts, "delete ts")
        keys = _as_array(pks, self._arrow_schema.field(self._pk.name).type)
        if keys.null_count:
            raise ValueError("cannot delete a null primary key")
        self._chains.delete(keys, ts)
        self._masks.clear()

    def vector_matrix(self, field: str) -> np.ndarray | SparseRows:
        """The matrix of a vector field (a view; do not modify): ``(rows, dim)`` float32 for a
        float vector field, ``(rows, dim / 8)`` uint8 for a binary one, CSR rows for a sparse one,
        ``(rows, dim)`` float16, uint16 (bfloat16 bits) or int8 for a narrow one
        (``common/narrow_vectors.py``)."""
        return self._column(field).matrix()

    def vectors_on_disk(self, field: str) -> bool:
        """The field's rows live in a mapped file (``keep_vectors_on_disk``)."""
        column = self._column(field)
        return isinstance(column, VectorColumn | NarrowVectorColumn) and column.on_disk

    def keep_vectors_on_disk(self, field: str, path: str) -> None:
        """Keep a dense vector field's rows in a new file at ``path``, mapped, instead of in memory
        (a sealed segment whose index of the field lives on disk). The store keeps serving them."""
        column = self._column(field)
        if not isinstance(column, VectorColumn | NarrowVectorColumn):
            raise ValueError(f"{field!r} is not a dense vector field")
        column.keep_on_disk(path)
        self._table = None  # a cached Arrow view would keep the in-memory rows alive

    def vector_valid(self, field: str) -> np.ndarray | None:
        """Bool per row: the vector is not null (None when none is null)."""
        return self._column(field).valid()

    def _column(self, field: str) -> AnyVectorColumn:
        column = self._vectors.get(field)
        if column is None:
            raise ValueError(f"{field!r} is not a vector field")
        return column

    def selection(self, read_ts: int, mask: np.ndarray | None) -> np.ndarray:
        """Bool per row: visible at ``read_ts`` and in ``mask`` (when given)."""
        return self._selection(read_ts, mask)

    def unexpired(self, expire_before: int) -> np.ndarray | None:
        """Bool per stored row: written at or after ``expire_before`` (a TTL's bound, 0: none);
        None when no row has expired."""
        if not expire_before:
            return None
        kept = self._chains.written_since(expire_before)
        return None if kept.all() else kept

    def hits_table(
        self, query: np.ndarray, rows: np.ndarray, distance: np.ndarray, output_fields: Sequence[str] = ()
    ) -> pa.Table:
        """A search result table (``search``'s columns) for hits given as flat arrays, best first per query."""
        outputs = self._output_columns(output_fields)
        hits = Hits(
            query=np.asarray(query, dtype=np.int32),
            row=np.asarray(rows, dtype=np.int64),
            distance=np.asarray(distance, dtype=np.float32),
        )
        return self._hits_table(hits, outputs)

    def cut(self, pks: pa.Array | pa.ChunkedArray, ts: np.ndarray) -> None:
        """Delete key ``i`` at ``ts[i]`` (``VersionChains.cut``): late, repeated and unordered pairs are fine."""
        keys = _as_array(pks, self._arrow_schema.field(self._pk.name).type)
        if keys.null_count:
            raise ValueError("cannot delete a null primary key")
        self._chains.cut(keys, np.asarray(ts, dtype=np.uint64))
        self._masks.clear()

    def newest_insert_ts(self, pks: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Per key, the timestamp of its newest stored version (deleted or not); 0 where none is stored."""
        keys = _as_array(pks, self._arrow_schema.field(self._pk.name).type)
        return self._chains.newest_begin(keys)

    def versions(self, among: pa.Array | None = None) -> tuple[pa.Array, np.ndarray]:
        """``(pk, _ts)`` of every stored row (deleted or superseded ones too), or of rows whose key is in ``among``."""
        if self.num_rows == 0:
            return pa.array([], self._arrow_schema.field(self._pk.name).type), np.zeros(0, dtype=np.uint64)
        t = self._rows.table()
        keys = t.column(self._pk.name).combine_chunks()
        ts = t.column(TIMESTAMP_COLUMN).combine_chunks()
        if among is not None:
            hit = pc.is_in(keys, value_set=among)
            keys, ts = keys.filter(hit), ts.filter(hit)
        return keys, np.asarray(ts.to_numpy(zero_copy_only=False), dtype=np.uint64)

    def primary_keys(self) -> pa.Array:
        """Every distinct primary key stored here."""
        if self.num_rows == 0:
            return pa.array([], self._arrow_schema.field(self._pk.name).type)
        keys = self._rows.table().column(self._pk.name)
        return pc.unique(keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys)

    def visible_mask(self, read_ts: int) -> np.ndarray:
        """Bool per stored row: the row a read of its key sees at ``read_ts`` (one per key: the live
        version; of rows inserted together under one key, the last).

        Cached until the next write; the array is read-only.
        """
        _check_ts(read_ts, "read ts")
        mask = self._masks.get(read_ts)
        if mask is None:
            mask = self._chains.visible(read_ts)
            mask.flags.writeable = False
            if len(self._masks) >= _MASK_CACHE_SIZE:
                del self._masks[next(iter(self._masks))]
            self._masks[read_ts] = mask
        return mask

    def table(self) -> pa.Table:
        """Every stored row (``schema.arrow_schema()`` columns), cached until the next insert.

        Vector columns are zero-copy over the search matrices.
        """
        if self._table is None:
            scalars = self._rows.table()
            columns: list[pa.Array | pa.ChunkedArray] = []
            for f in self._arrow_schema:
                vector = self._vectors.get(f.name)
                columns.append(scalars.column(f.name) if vector is None else vector.to_arrow())
            self._table = pa.Table.from_arrays(columns, schema=self._arrow_schema)
        return self._table

    def search(
        self,
        *,
        field: str,
        vectors: np.ndarray,
        metric: str,
        topk: int,
        read_ts: int,
        mask: np.ndarray | None = None,
        output_fields: Sequence[str] = (),
    ) -> pa.Table:
        """Exact top-``topk`` visible rows (and ``mask``) per query vector.

        ``vectors`` are ``(nq, dim)`` floats for a float or narrow (FLOAT16, BFLOAT16,
        INT8) vector field, ``(nq, dim / 8)`` uint8 codes for a binary one. Returns columns ``query`` (int32), the primary
        key, ``distance`` (float32), then ``output_fields``; rows sorted by query,
        then best first (ties: earlier stored row first). Raises ``ValueError`` for an
        unknown metric or field, a metric of the other vector kind, a dimension
        mismatch or ``topk < 1``.
        """
        parsed = parse_metric(metric)
        column = self._column(field)
        if isinstance(column, SparseVectorColumn):
            raise ValueError(f"{field!r} is a sparse vector field: search it with querynode.worker.segment.search_rows")
        binary = isinstance(column, BinaryVectorColumn)
        if parsed.is_binary != binary:
            kind = "binary" if binary else "float"
            raise ValueError(f"metric {parsed.value} cannot search the {kind} vector field {field!r}")
        width = column.code_size if isinstance(column, BinaryVectorColumn) else column.dim
        queries = np.asarray(vectors, dtype=np.uint8 if binary else np.float32)
        if queries.ndim == 1:
            queries = queries.reshape(1, -1)
        if queries.ndim != 2 or queries.shape[1] != width:
            raise ValueError(f"query vectors must be (nq, {width}), got shape {np.shape(vectors)}")
        if topk < 1:
            raise ValueError(f"topk must be at least 1, got {topk}")
        outputs = self._output_columns(output_fields)
        for name in (QUERY_COLUMN, DISTANCE_COLUMN):
            if name in outputs:
                raise ValueError(f"output field {name!r} collides with a result column")

        selected = self._selection(read_ts, mask)
        valid = column.valid()
        if valid is not None:
            selected = selected & valid
        candidates = None if selected.all() else np.flatnonzero(selected)
        hits = exact_search(column, queries, metric=parsed, topk=topk, candidates=candidates)
        return self._hits_table(hits, outputs)

    def query(
        self,
        *,
        read_ts: int,
        mask: np.ndarray | None = None,
        output_fields: Sequence[str] = (),
        limit: int | None = None,
        rows: np.ndarray | None = None,
    ) -> pa.Table:
        """Visible rows (and ``mask``): primary key then ``output_fields``, by ascending key.

        At most ``limit`` rows when given (the smallest keys). ``rows``, instead of ``mask``: the
        positions that may be returned (each once, any order; a scalar index's answer), so that no
        pass over every row is made.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        outputs = self._output_columns(output_fields)
        int_keys = self._int_keys()
        if int_keys is not None and limit != 0:  # numpy over the cached keys (``keyorder.py``)
            if rows is None:
                chosen = ordered_mask(None if mask is None else self._checked(mask), self.visible_mask(read_ts),
                                      int_keys, ascending=self._int_keys_ascend(), limit=limit)
            else:
                chosen = ordered_rows(rows, self.visible_mask(read_ts), int_keys,
                                      ascending=self._int_keys_ascend(), limit=limit)
            return self._take_columns(chosen, [self._pk.name, *outputs])
        if rows is not None:
            rows = rows[self.visible_mask(read_ts)[rows]]
        else:
            rows = np.flatnonzero(self._selection(read_ts, mask))
        if limit == 0:
            rows = rows[:0]
        keys = self._rows.take(rows, [self._pk.name]).column(0)
        if limit is not None and 0 < limit < len(rows):
            # Visible keys are unique, so an unstable selection is deterministic.
            order = pc.select_k_unstable(keys, k=limit, sort_keys=[("key", "ascending")])
        else:
            order = pc.sort_indices(keys)
        return self._take_columns(rows[order.to_numpy()], [self._pk.name, *outputs])

    def count(self, *, read_ts: int, mask: np.ndarray | None = None, rows: np.ndarray | None = None) -> int:
        """Number of live rows (and ``mask``, or among ``rows``: positions, each once) at ``read_ts``:
        every row of a key inserted twice with one timestamp counts, as Milvus's ``count(*)`` counts
        them (``mvcc``, siblings)."""
        if rows is not None:
            if not self._chains.has_siblings:
                return int(np.count_nonzero(self.visible_mask(read_ts)[rows]))
            _check_ts(read_ts, "read ts")
            return int(np.count_nonzero(self._chains.live(read_ts)[rows]))
        if not self._chains.has_siblings:
            return int(np.count_nonzero(self._selection(read_ts, mask)))
        _check_ts(read_ts, "read ts")
        live = self._chains.live(read_ts)
        return int(np.count_nonzero(live if mask is None else live & self._checked(mask)))

    def _selection(self, read_ts: int, mask: np.ndarray | None) -> np.ndarray:
        visible = self.visible_mask(read_ts)
        if mask is None:
            return visible
        selected: np.ndarray = visible & self._checked(mask)
        return selected

    def _checked(self, mask: np.ndarray) -> np.ndarray:
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
            raise ValueError("mask must be a numpy bool array")
        if mask.shape != (self.num_rows,):
            raise ValueError(f"mask has shape {mask.shape}, store has {self.num_rows} rows")
        return mask

    def _output_columns(self, output_fields: Sequence[str]) -> list[str]:
        """Requested columns without the primary key or repeats, validated."""
        names = set(self._arrow_schema.names)
        out: list[str] = []
        for name in output_fields:
            if name not in names:
                raise ValueError(f"unknown output field {name!r}")
            if name != self._pk.name and name not in out:
                out.append(name)
        return out

    def _take_columns(self, rows: np.ndarray, names: Sequence[str]) -> pa.Table:
        scalar_names = [n for n in names if n not in self._vectors]
        scalars = self._rows.take(rows, scalar_names)
        arrays: list[pa.Array | pa.ChunkedArray] = []
        for name in names:
            vector = self._vectors.get(name)
            arrays.append(scalars.column(name) if vector is None else vector.take(rows))
        schema = pa.schema([self._arrow_schema.field(n) for n in names])
        return pa.Table.from_arrays(arrays, schema=schema)

    def _int_keys(self) -> np.ndarray | None:
        """The int64 primary keys in row order (cached until the next insert); ``None`` for VARCHAR keys."""
        if self._pk.dtype != DataType.INT64:
            return None
        if self._int_pks is None:
            self._int_pks = self._rows.table().column(self._pk.name).to_numpy()
        return self._int_pks

    def int_keys_in_row_order(self) -> bool:
        """Whether the primary keys are int64 and strictly increase with the row (a limited query then
        reads the first matching rows; ``keyorder.py``). O(rows) once per insert, then cached."""
        return self._int_keys_ascend()

    def _int_keys_ascend(self) -> bool:
        """Whether the int64 keys strictly increase with the row (cached like them)."""
        if self._keys_ascend is None:
            keys = self._int_keys()
            self._keys_ascend = keys is not None and keys_ascend(keys)
        return self._keys_ascend

    def _pk_column(self, rows: np.ndarray) -> pa.Array | pa.ChunkedArray:
        """The primary keys at ``rows``: int64 keys from a cached array (the search hot path)."""
        keys = self._int_keys()
        if keys is None:
            return self._rows.take(rows, [self._pk.name]).column(0)
        return pa.array(keys[rows], pa.int64())

    def _hits_table(self, hits: Hits, outputs: Sequence[str]) -> pa.Table:
        fields = list(self._hits_fields)
        arrays: list[pa.Array | pa.ChunkedArray] = [
            pa.array(hits.query, pa.int32()),
            self._pk_column(hits.row),
            pa.array(hits.distance, pa.float32()),
        ]
        if outputs:
            taken = self._take_columns(hits.row, outputs)
            for name in outputs:
                fields.append(self._arrow_schema.field(name))
                arrays.append(taken.column(name))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields) if outputs else self._hits_schema)

    def _conform(self, table: pa.Table) -> pa.Table:
        """``table`` with exactly the store's columns, types and one chunk per column."""
        columns = []
        for f in self._arrow_schema:
            if f.name not in table.column_names:
                raise ValueError(f"insert batch lacks column {f.name!r}")
            columns.append(_as_array(table.column(f.name), f.type))
        return pa.Table.from_arrays(columns, schema=self._arrow_schema)


def _as_array(values: pa.Array | pa.ChunkedArray, type_: pa.DataType) -> pa.Array:
    """``values`` as one contiguous array of ``type_``; ``ValueError`` if it cannot be cast."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.type != type_:
        try:
            values = values.cast(type_)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise ValueError(f"cannot convert {values.type} to {type_}") from err
    return values


def _check_ts(ts: int, what: str) -> None:
    if not 0 <= ts <= _MAX_TS:
        raise ValueError(f"{what} {ts} is not a uint64 timestamp")
