"""Writing and reading a segment's files: insert logs, delta logs, stats logs and manifests.

``SegmentWriter`` writes data files first and returns their descriptions; the caller
adds them to a ``SegmentManifest`` and writes that last (``write_manifest``), so a
manifest never names a file that is not complete. ``SegmentReader`` reads only what
a manifest names and tolerates nothing: a missing file raises ``ObjectNotFound``, an
undecodable or inconsistent one ``CorruptObject``; both name the file.

Every method blocks (Parquet encoding and I/O); call them from a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from common.errors import InvalidArgument
from common.schema import TIMESTAMP_COLUMN, CollectionSchema
from common.schema_evolution import conform_table, fill_column, fillable_in_files
from common.storage.columns import (
    FIELD_ID_KEY,
    SCALAR_GROUP_ID,
    TIMESTAMP_FIELD_ID,
    column_groups,
    group_arrow_schema,
    group_of,
    with_field_id,
)
from common.storage.errors import CorruptObject
from common.storage.layout import (
    delta_log_path,
    insert_log_path,
    manifest_path,
    manifest_prefix,
    manifest_version,
    stats_log_path,
)
from common.storage.manifest import DeltaLog, InsertLog, SegmentManifest
from common.storage.objectstore import ObjectStore
from common.storage.stats import SegmentStats

#: Column names of a delta-log file.
DELTA_PK_COLUMN = "pk"
DELTA_TS_COLUMN = "ts"

# Rows per Parquet row group are chosen so one group holds about this many uncompressed bytes.
_ROW_GROUP_BYTES = 64 << 20


def delta_arrow_schema(schema: CollectionSchema, *, with_field_ids: bool = False) -> pa.Schema:
    """``pk`` (the primary key's Arrow type) and ``ts`` (uint64), both non-null."""
    pk = schema.primary_field
    fields = [
        pa.field(DELTA_PK_COLUMN, pk.arrow_type(), nullable=False),
        pa.field(DELTA_TS_COLUMN, pa.uint64(), nullable=False),
    ]
    if with_field_ids:
        fields = [with_field_id(fields[0], pk.field_id), with_field_id(fields[1], TIMESTAMP_FIELD_ID)]
    return pa.schema(fields)


class SegmentWriter:
    """Writes the files of segments of one collection schema into one store."""

    def __init__(self, store: ObjectStore, schema: CollectionSchema) -> None:
        self._store = store
        self._schema = schema
        self._arrow = schema.arrow_schema()
        self._groups = column_groups(schema)
        self._group_schemas = {g.group_id: group_arrow_schema(schema, g) for g in self._groups}
        self._delta_schema = delta_arrow_schema(schema, with_field_ids=True)

    def write_insert_log(
        self,
        *,
        collection_id: int,
        partition_id: int,
        segment_id: int,
        log_id: int,
        table: pa.Table,
    ) -> tuple[InsertLog, str]:
        """Write one batch of rows: a Parquet file per column group, then its stats log.

        ``table`` has exactly the columns of ``schema.arrow_schema()`` (any order, castable
        types), at least one row, rows in ``_ts`` order, no null primary key or ``_ts``.

        Returns:
            The ``InsertLog`` to add to the manifest, and the stats log path.

        Raises:
            InvalidArgument: the table does not fit the schema or breaks an order rule.
        """
        rows = self._conform(table)
        if rows.num_rows == 0:
            raise InvalidArgument("an insert log needs at least one row")
        pk_name = self._schema.primary_field.name
        if rows.column(pk_name).null_count:
            raise InvalidArgument(f"primary key {pk_name!r} must not be null")
        ts = _uint64s(rows.column(TIMESTAMP_COLUMN))
        if np.any(ts[1:] < ts[:-1]):
            raise InvalidArgument("insert log rows must be in _ts order")
        files: dict[int, str] = {}
        for group in self._groups:
            path = insert_log_path(collection_id, partition_id, segment_id, group.group_id, log_id)
            part = rows.select(list(group.fields)).cast(self._group_schemas[group.group_id])
            self._store.write_parquet(
                path,
                part,
                row_group_size=_row_group_rows(part),
                use_dictionary=group.group_id == SCALAR_GROUP_ID,
            )
            files[group.group_id] = path
        stats_path = stats_log_path(collection_id, partition_id, segment_id, log_id)
        self._store.write_bytes(stats_path, SegmentStats.build(rows.column(pk_name)).to_bytes())
        log = InsertLog(log_id=log_id, rows=rows.num_rows, min_ts=int(ts[0]), max_ts=int(ts[-1]), files=files)
        return log, stats_path

    def write_delta_log(
        self,
        *,
        collection_id: int,
        partition_id: int,
        segment_id: int,
        log_id: int,
        pks: pa.Array | pa.ChunkedArray,
        ts: npt.ArrayLike,
    ) -> DeltaLog:
        """Write one batch of deletes, row ``i`` = "delete ``pks[i]`` at ``ts[i]``", in the given order.

        Raises:
            InvalidArgument: empty, lengths differ, a null key, a key of the wrong type, a negative ts.
        """
        stamps = np.asarray(ts)
        if stamps.ndim != 1 or len(stamps) != len(pks):
            raise InvalidArgument(f"delta log has {len(pks)} keys but {stamps.size} timestamps")
        if len(stamps) == 0:
            raise InvalidArgument("a delta log needs at least one delete")
        if stamps.dtype.kind not in "iu" or (stamps.dtype.kind == "i" and bool(np.any(stamps < 0))):
            raise InvalidArgument(f"delete timestamps must be non-negative integers, got dtype {stamps.dtype}")
        if pks.null_count:
            raise InvalidArgument("deleted primary keys must not be null")
        pk_type = self._delta_schema.field(DELTA_PK_COLUMN).type
        if isinstance(pks, pa.ChunkedArray):
            pks = pks.combine_chunks()
        try:
            keys = pks.cast(pk_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError) as err:
            raise InvalidArgument(f"deleted primary keys must be {pk_type}: {err}") from None
        stamps = stamps.astype(np.uint64)
        table = pa.Table.from_arrays([keys, pa.array(stamps, pa.uint64())], schema=self._delta_schema)
        path = delta_log_path(collection_id, partition_id, segment_id, log_id)
        self._store.write_parquet(path, table, row_group_size=_row_group_rows(table))
        return DeltaLog(log_id=log_id, rows=len(stamps), min_ts=int(stamps.min()), max_ts=int(stamps.max()), path=path)

    def write_manifest(self, manifest: SegmentManifest) -> str:
        """Write ``manifest`` at its versioned path (replacing that version if present); returns the path."""
        path = manifest_path(manifest.collection_id, manifest.partition_id, manifest.segment_id, manifest.version)
        self._store.write_bytes(path, manifest.to_json())
        return path

    def _conform(self, table: pa.Table) -> pa.Table:
        """``table`` in the schema's column order and types. Rows buffered before a field was added
        may lack its column: it is filled (``schema_evolution``); any other missing column is refused."""
        expected = self._arrow.names
        missing = [
            n for n in expected
            if n not in table.column_names and not (self._schema.has_field(n) and fillable_in_files(self._schema.field(n)))
        ]
        extra = [n for n in table.column_names if n not in expected]
        if missing or extra or len(set(table.column_names)) != len(table.column_names):
            raise InvalidArgument(
                f"insert log table must have exactly the columns {expected}; missing {missing}, unexpected {extra}"
            )
        try:
            return conform_table(table.select([n for n in expected if n in table.column_names]), self._arrow, self._schema)
        except ValueError as err:
            raise InvalidArgument(f"insert log table does not fit the collection schema: {err}") from None


class SegmentReader:
    """Reads segments of one collection schema from one store, using only what manifests name."""

    def __init__(self, store: ObjectStore, schema: CollectionSchema) -> None:
        self._store = store
        self._schema = schema
        self._arrow = schema.arrow_schema()
        self._groups = column_groups(schema)
        self._delta_schema = delta_arrow_schema(schema)

    def read_manifest(self, path: str) -> SegmentManifest:
        """The manifest stored at ``path``. Raises ``ObjectNotFound`` / ``CorruptObject`` naming it."""
        data = self._store.read_bytes(path)
        try:
            return SegmentManifest.from_json(data)
        except CorruptObject as err:
            raise CorruptObject(f"manifest {path}: {err.message}") from err

    def latest_manifest_path(self, collection_id: int, partition_id: int, segment_id: int) -> str | None:
        """The highest manifest version written for a segment, or None.

        The committed version is the one the coordinator recorded; a higher one may be
        a write that was never committed. Use this for tools and recovery, not queries.
        """
        entries = self._store.list(manifest_prefix(collection_id, partition_id, segment_id))
        versions = [(v, e.path) for e in entries if (v := manifest_version(e.path)) is not None]
        return max(versions)[1] if versions else None

    def read_inserts(self, manifest: SegmentManifest, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row of the manifest's insert logs, in log order, with the schema's Arrow types.

        ``columns`` limits the result (and the files read) to those columns, kept in
        schema order; by default every column of ``schema.arrow_schema()``.

        Raises:
            InvalidArgument: a requested column is not stored.
            ObjectNotFound: a file the manifest names is missing.
            CorruptObject: a file does not decode or disagrees with the manifest.
        """
        wanted = self._wanted_columns(columns)
        target = pa.schema([self._arrow.field(name) for name in wanted])
        reads = [
            (group.group_id, [c for c in group.fields if c in wanted])
            for group in self._groups
            if any(c in wanted for c in group.fields)
        ]
        chunks: dict[str, list[pa.ChunkedArray | pa.Array]] = {name: [] for name in wanted}
        for log in manifest.insert_logs:
            for group_id, names in reads:
                path = log.files.get(group_id)
                if path is None and self._added_after(group_id, log):
                    for name in names:  # a vector field added after this log was written
                        chunks[name].append(fill_column(self._schema.field(name), log.rows))
                    continue
                if path is None:
                    raise CorruptObject(
                        f"segment {manifest.segment_id} insert log {log.log_id} names no file for column group {group_id}"
                    )
                part = self._read_parquet(path, names, expected_rows=log.rows)
                for name in names:
                    chunks[name].append(part.column(name))
        arrays = [_concat(chunks[field.name], field.type, path_hint=field.name) for field in target]
        return pa.Table.from_arrays(arrays, schema=target)

    def read_deltas(self, manifest: SegmentManifest) -> pa.Table:
        """Every delete of the manifest's delta logs, in log order: columns ``pk`` and ``ts``."""
        names = [DELTA_PK_COLUMN, DELTA_TS_COLUMN]
        chunks: dict[str, list[pa.ChunkedArray]] = {name: [] for name in names}
        for log in manifest.delta_logs:
            part = self._read_parquet(log.path, names, expected_rows=log.rows)
            for name in names:
                chunks[name].append(part.column(name))
        arrays = [_concat(chunks[f.name], f.type, path_hint=f.name) for f in self._delta_schema]
        return pa.Table.from_arrays(arrays, schema=self._delta_schema)

    def read_stats(self, manifest: SegmentManifest) -> list[SegmentStats]:
        """The stats of each stats log the manifest names, in manifest order."""
        result = []
        for path in manifest.stats_logs:
            data = self._store.read_bytes(path)
            try:
                result.append(SegmentStats.from_bytes(data))
            except CorruptObject as err:
                raise CorruptObject(f"stats log {path}: {err.message}") from err
        return result

    def _wanted_columns(self, columns: Sequence[str] | None) -> list[str]:
        if columns is None:
            return list(self._arrow.names)
        if isinstance(columns, str):
            raise InvalidArgument("columns must be a list of column names, not one string")
        for name in columns:
            group_of(self._groups, name)  # raises for a column that is not stored
        requested = set(columns)
        return [name for name in self._arrow.names if name in requested]

    def _added_after(self, group_id: int, log: InsertLog) -> bool:
        """The log names no file for ``group_id`` because its field was added after the log was written:
        a fillable vector field added later (its id above every group the log has)."""
        field = next((f for f in self._schema.vector_fields if f.field_id == group_id), None)
        return field is not None and fillable_in_files(field) and field.field_id > max(log.files)

    def _read_parquet(self, path: str, names: list[str], *, expected_rows: int) -> pa.Table:
        try:
            table = self._store.read_parquet(path, columns=names)
        except pa.ArrowInvalid as err:  # not Parquet, or lacks a column; I/O errors pass through
            table = self._read_older(path, names, expected_rows, err)
        if table.num_rows != expected_rows:
            raise CorruptObject(f"{path} has {table.num_rows} rows, its manifest says {expected_rows}")
        return table

    def _read_older(self, path: str, names: list[str], rows: int, err: pa.ArrowInvalid) -> pa.Table:
        """A file written before some of ``names`` were added to the collection: the columns it has,
        the added ones filled (``schema_evolution``). Any other file that fails to read is corrupt."""
        corrupt = CorruptObject(f"cannot read Parquet file {path}: {err}")
        try:
            stored = self._store.read_parquet_schema(path)
        except pa.ArrowInvalid:
            raise corrupt from err
        newest = max((_field_id(f) for f in stored), default=-1)
        missing = [n for n in names if stored.get_field_index(n) < 0]
        for name in missing:
            field = self._schema.field(name) if self._schema.has_field(name) else None
            if field is None or not fillable_in_files(field) or field.field_id <= newest:
                raise corrupt from err
        present = [n for n in names if n not in missing]
        try:
            table = self._store.read_parquet(path, columns=present)
        except pa.ArrowInvalid as again:
            raise CorruptObject(f"cannot read Parquet file {path}: {again}") from again
        if table.num_rows != rows:
            raise CorruptObject(f"{path} has {table.num_rows} rows, its manifest says {rows}")
        for name in missing:
            table = table.append_column(name, fill_column(self._schema.field(name), rows))
        return table.select(names)


def _field_id(field: pa.Field) -> int:
    """The Parquet field id a column was written with (-1: none)."""
    raw = (field.metadata or {}).get(FIELD_ID_KEY)
    return int(raw) if raw is not None else -1


def _concat(chunks: list[pa.ChunkedArray | pa.Array], arrow_type: pa.DataType, *, path_hint: str) -> pa.ChunkedArray:
    try:
        # The Arrow chunks themselves: handed ChunkedArrays, pa.chunked_array would iterate
        # their values as Python objects (28 s for 250k vectors of dim 128).
        arrays = [c.cast(arrow_type) for c in chunks]
        return pa.chunked_array(
            [a for c in arrays for a in (c.chunks if isinstance(c, pa.ChunkedArray) else [c])], type=arrow_type
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise CorruptObject(f"column {path_hint!r} is stored with an unexpected type: {err}") from err


def _uint64s(column: pa.ChunkedArray) -> npt.NDArray[np.uint64]:
    if column.null_count:
        raise InvalidArgument(f"{TIMESTAMP_COLUMN} must not be null")
    return np.asarray(column.to_numpy(), dtype=np.uint64)


def _row_group_rows(table: pa.Table) -> int:
    if table.num_rows == 0:
        return 1
    bytes_per_row = max(1, table.nbytes // table.num_rows)
    return max(1, min(table.num_rows, _ROW_GROUP_BYTES // bytes_per_row))
