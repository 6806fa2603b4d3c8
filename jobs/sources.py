"""Import files: where they are, what they hold, and reading them in chunks.

A file name is a local path (``/abs/file.parquet`` or ``file:///abs/file.parquet``)
or a path relative to the object store's root (``imports/part-0.parquet``), as
Milvus takes paths inside its bucket. Formats go by extension:

* ``.parquet``: one column per field (vectors as lists of numbers; binary
  vectors as binary values or lists of byte values, ``dim / 8`` each);
* ``.json``: ``{"rows": [{...}, ...]}`` or ``[{...}, ...]``; ``.jsonl``: one object per line;
* ``.npy``: one file per field, named after it (``id.npy``, ``vec.npy``); every
  ``.npy`` of one request forms one set (binary vectors: ``(rows, dim / 8)`` uint8;
  sparse vectors cannot come from ``.npy``, as in Milvus; FLOAT16/BFLOAT16: ``(rows, dim)``
  floats or ``(rows, dim * 2)`` uint8 bytes; INT8: ``(rows, dim)`` int8).

``describe_files`` is the coordinator's check before a job starts: it reads only
Parquet footers and NumPy headers (and JSON sizes), refuses what cannot fit the
schema, and counts rows (exactly, or for JSON an upper bound) so auto ids can
be reserved. ``file_chunks``/``read_chunk`` are what the job's tasks do: one
Parquet row group, one slice of a NumPy set, or one whole JSON file each.
Everything blocks.
"""

from __future__ import annotations

import io
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from common.storage.objectstore import ObjectStore
from jobs.conform import (
    ImportFileError,
    check_columns,
    conform,
    json_rows_to_columns,
    numpy_column,
)
from jobs.narrow_import import npy_fits
from jobs.plans import ImportFile

#: Rows per task when a NumPy set is split.
NUMPY_CHUNK_ROWS = 200_000
_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".npy": "numpy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    file_index: int
    part: int  # Parquet row group, or slice number
    row_start: int  # first row of the chunk within its file
    rows: int


def locate(name: str, storage_uri: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem and path of an import file name (local path or object-store path)."""
    if name.startswith("file://"):
        parts = urlsplit(name)
        if parts.netloc not in ("", "localhost"):
            raise InvalidArgument(f"import file {name}: only local file:// URIs are supported")
        return pafs.LocalFileSystem(), parts.path
    if name.startswith("/"):
        return pafs.LocalFileSystem(), name
    store = ObjectStore.from_uri(storage_uri)
    try:
        return store.filesystem, store.full_path(name)
    except InvalidArgument as err:
        raise InvalidArgument(f"import file {name}: {err.message}") from None


def file_format(name: str) -> str:
    ext = posixpath.splitext(urlsplit(name).path if name.startswith("file://") else name)[1].lower()
    fmt = _FORMATS.get(ext)
    if fmt is None:
        raise InvalidArgument(
            f"import file {name}: unsupported format {ext or '(no extension)'}; use .parquet, .json, .jsonl or .npy"
        )
    return fmt


def _size(fs: pafs.FileSystem, path: str, name: str) -> int:
    info = fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        raise ImportFileError(name, "no such file")
    return int(info.size or 0)


def describe_files(files: Sequence[str], schema: CollectionSchema, storage_uri: str) -> list[ImportFile]:
    """Group, check and count the files of one import request (footers and headers only).

    Raises:
        InvalidArgument: no files, an unknown format, a mix of NumPy and other files.
        ImportFileError: a missing file, or one whose columns cannot fit ``schema``.
    """
    if not files:
        raise InvalidArgument("import needs at least one file")
    formats = [file_format(f) for f in files]
    out: list[ImportFile] = []
    if "numpy" in formats:
        if set(formats) != {"numpy"}:
            raise InvalidArgument("NumPy files (.npy, one per field) cannot be mixed with other files in one import")
        out.append(_describe_numpy(files, schema, storage_uri))
    else:
        for name, fmt in zip(files, formats, strict=True):
            fs, path = locate(name, storage_uri)
            size = _size(fs, path, name)
            if fmt == "parquet":
                try:
                    with fs.open_input_file(path) as f:
                        meta = pq.ParquetFile(f)
                        arrow = meta.schema_arrow
                        rows = meta.metadata.num_rows
                except (pa.ArrowInvalid, OSError) as err:
                    raise ImportFileError(name, f"not a readable Parquet file: {err}") from None
                check_columns({c.name: c.type for c in arrow}, schema, file=name)
                out.append(ImportFile(name=name, format=fmt, paths={"": path}, rows=rows))
            else:
                # Rows are counted by the job; "{}," is the smallest row, so size // 3 + 1 bounds them.
                out.append(ImportFile(name=name, format=fmt, paths={"": path}, rows=size // 3 + 1))
    offset = 0
    placed = []
    for f in out:
        placed.append(ImportFile(name=f.name, format=f.format, paths=f.paths, rows=f.rows, id_offset=offset))
        offset += f.rows
    return placed


def _describe_numpy(files: Sequence[str], schema: CollectionSchema, storage_uri: str) -> ImportFile:
    paths: dict[str, str] = {}
    types: dict[str, pa.DataType] = {}
    rows: int | None = None
    for name in files:
        field = posixpath.splitext(posixpath.basename(name))[0]
        if field in paths:
            raise ImportFileError(name, "two files for the same field", field=field)
        fs, path = locate(name, storage_uri)
        _size(fs, path, name)
        try:
            shape, dtype = _npy_header(fs, path)
        except ValueError as err:
            raise ImportFileError(name, f"not a readable .npy file: {err}") from None
        paths[field] = path
        if schema.has_field(field) and schema.field(field).dtype == DataType.SPARSE_FLOAT_VECTOR:
            raise ImportFileError(
                name, "sparse vectors cannot be imported from .npy files (as in Milvus); use Parquet or JSON", field=field
            )
        if len(shape) == 2:
            types[field] = pa.list_(pa.from_numpy_dtype(dtype), shape[1])
        elif len(shape) == 1:
            types[field] = pa.string() if dtype.kind in "US" else pa.from_numpy_dtype(dtype)
        else:
            raise ImportFileError(name, f"must have 1 or 2 dimensions, has shape {shape}", field=field)
        if len(shape) == 2 and schema.has_field(field) and schema.field(field).dtype == DataType.FLOAT_VECTOR:
            if shape[1] != schema.field(field).dim:
                raise ImportFileError(
                    name, f"vectors have {shape[1]} dimensions, the field has dim {schema.field(field).dim}", field=field
                )
        if len(shape) == 2 and schema.has_field(field) and schema.field(field).dtype == DataType.BINARY_VECTOR:
            binary = schema.field(field)
            if dtype != np.uint8 or shape[1] != binary.code_size:
                raise ImportFileError(
                    name,
                    f"binary vectors must be a (rows, {binary.code_size}) uint8 array (dim {binary.dim} / 8), "
                    f"got {dtype} of shape {shape}",
                    field=field,
                )
        if len(shape) == 2 and schema.has_field(field) and schema.field(field).dtype.is_narrow_vector:
            narrow = schema.field(field)
            if not npy_fits(narrow, dtype, shape[1]):
                raise ImportFileError(
                    name,
                    f"{narrow.dtype.name} vectors must be a (rows, {narrow.dim}) array of their values "
                    f"or a (rows, {narrow.code_size}) uint8 array of their bytes (int8 values only for INT8_VECTOR), "
                    f"got {dtype} of shape {shape}",
                    field=field,
                )
        if rows is None:
            rows = shape[0]
        elif shape[0] != rows:
            raise ImportFileError(name, f"has {shape[0]} rows, the other .npy files have {rows}", field=field)
    label = ", ".join(files)
    check_columns(types, schema, file=label)
    return ImportFile(name=label, format="numpy", paths=paths, rows=rows or 0)


def _npy_header(fs: pafs.FileSystem, path: str) -> tuple[tuple[int, ...], np.dtype]:
    with fs.open_input_stream(path) as f:
        head = io.BytesIO(bytes(f.read(4096)))
    version = np.lib.format.read_magic(head)
    if version == (1, 0):
        shape, _fortran, dtype = np.lib.format.read_array_header_1_0(head)
    else:
        shape, _fortran, dtype = np.lib.format.read_array_header_2_0(head)
    return tuple(int(s) for s in shape), np.dtype(dtype)


def file_chunks(files: Sequence[ImportFile], storage_uri: str) -> list[Chunk]:
    """The read units of every file (blocking: reads Parquet footers)."""
    out = []
    for i, f in enumerate(files):
        if f.format == "parquet":
            fs, path = _local_or(f.paths[""], storage_uri)
            with fs.open_input_file(path) as handle:
                meta = pq.ParquetFile(handle).metadata
            start = 0
            for g in range(meta.num_row_groups):
                n = meta.row_group(g).num_rows
                out.append(Chunk(file_index=i, part=g, row_start=start, rows=n))
                start += n
        elif f.format == "numpy":
            for part, start in enumerate(range(0, max(f.rows, 1), NUMPY_CHUNK_ROWS)):
                out.append(Chunk(file_index=i, part=part, row_start=start, rows=min(NUMPY_CHUNK_ROWS, f.rows - start)))
        else:
            out.append(Chunk(file_index=i, part=0, row_start=0, rows=f.rows))
    return out


def _local_or(path: str, storage_uri: str | None = None) -> tuple[pafs.FileSystem, str]:
    """``ImportFile`` paths are already resolved: absolute local paths or full object-store paths."""
    if path.startswith("/"):
        return pafs.LocalFileSystem(), path
    if storage_uri is None:
        raise InvalidArgument(f"object-store path {path} needs the store")
    return ObjectStore.from_uri(storage_uri).filesystem, path


def read_chunk(f: ImportFile, chunk: Chunk, schema: CollectionSchema, storage_uri: str) -> pa.Table:
    """The chunk's rows, validated: the collection's insert columns (an auto-id key still null).

    Raises:
        ImportFileError: naming the file and field.
    """
    if f.format == "parquet":
        fs, path = _local_or(f.paths[""], storage_uri)
        try:
            with fs.open_input_file(path) as handle:
                table = pq.ParquetFile(handle).read_row_group(chunk.part)
        except (pa.ArrowInvalid, OSError) as err:
            raise ImportFileError(f.name, f"cannot read row group {chunk.part}: {err}") from None
        return conform({c: table.column(c) for c in table.column_names}, table.num_rows, schema, file=f.name)
    if f.format == "numpy":
        columns = {}
        for field, path in f.paths.items():
            fs, full = _local_or(path, storage_uri)
            values = _load_npy(fs, full, chunk.row_start, chunk.row_start + chunk.rows, name=f.name, field=field)
            columns[field] = numpy_column(values)
        return conform(columns, chunk.rows, schema, file=f.name)
    fs, path = _local_or(f.paths[""], storage_uri)
    with fs.open_input_stream(path) as handle:
        raw = bytes(handle.read())
    rows = _json_rows(raw, f.name, lines=path.lower().endswith(".jsonl"))
    columns, count = json_rows_to_columns(rows, schema, file=f.name)
    return conform(columns, count, schema, file=f.name)


def _load_npy(fs: pafs.FileSystem, path: str, start: int, stop: int, *, name: str, field: str) -> np.ndarray:
    try:
        if isinstance(fs, pafs.LocalFileSystem):
            values = np.load(path, mmap_mode="r", allow_pickle=False)
        else:
            with fs.open_input_stream(path) as handle:
                values = np.load(io.BytesIO(bytes(handle.read())), allow_pickle=False)
    except (ValueError, OSError) as err:
        raise ImportFileError(name, f"cannot read {path}: {err}", field=field) from None
    return np.array(values[start:stop])


def _json_rows(raw: bytes, name: str, *, lines: bool) -> list[object]:
    try:
        if lines:
            return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise ImportFileError(name, f"not valid JSON: {err}") from None
    except RecursionError:
        raise ImportFileError(name, "not valid JSON: nested too deeply to decode") from None
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list):
        return list(doc["rows"])
    if isinstance(doc, list):
        return doc
    raise ImportFileError(name, 'expected {"rows": [...]} or a list of row objects')
