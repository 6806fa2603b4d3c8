"""Primary-key statistics of a batch of rows (the stats-log file): row count, min/max PK, bloom filter.

``may_contain`` answers "could this segment hold these keys?" for a whole array at
once, with no false negatives: a key outside ``[min_pk, max_pk]`` is out, a key
inside is checked against the bloom filter. Strings order by their UTF-8 bytes
(Arrow's order, the same as Python's code-point order).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from common.errors import InvalidArgument
from common.schema import DataType
from common.storage.bloom import BoolArray, PkBloomFilter, key_type_of
from common.storage.errors import CorruptObject

MAGIC = b"SPST"
FORMAT_VERSION = 1
_HAS_RANGE = 0x01
#: magic, format version, PK type (Milvus DataType number), flags, rows.
_HEADER = struct.Struct("<4sHBBQ")
_INT_RANGE = struct.Struct("<qq")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")

PrimaryKey = int | str


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentStats:
    """Statistics of one insert log's primary keys. ``min_pk``/``max_pk`` are None iff ``rows == 0``."""

    rows: int
    min_pk: PrimaryKey | None
    max_pk: PrimaryKey | None
    bloom: PkBloomFilter

    def __post_init__(self) -> None:
        if self.rows < 0:
            raise InvalidArgument(f"stats row count must not be negative, got {self.rows}")
        if (self.min_pk is None) != (self.rows == 0) or (self.max_pk is None) != (self.rows == 0):
            raise InvalidArgument("stats have a min/max primary key exactly when they have rows")
        expected = int if self.bloom.key_type == DataType.INT64 else str
        for value in (self.min_pk, self.max_pk):
            if value is not None and type(value) is not expected:
                raise InvalidArgument(f"stats of {self.bloom.key_type.name} keys got min/max {value!r}")

    @property
    def pk_type(self) -> DataType:
        """INT64 or VARCHAR."""
        return self.bloom.key_type

    @staticmethod
    def build(pks: pa.Array | pa.ChunkedArray, *, fp_rate: float = 0.001) -> SegmentStats:
        """Statistics of ``pks`` (INT64 or VARCHAR keys, no nulls)."""
        bloom = PkBloomFilter.build(pks, fp_rate=fp_rate)
        if len(pks) == 0:
            return SegmentStats(rows=0, min_pk=None, max_pk=None, bloom=bloom)
        bounds = pc.min_max(pks)
        return SegmentStats(rows=len(pks), min_pk=bounds["min"].as_py(), max_pk=bounds["max"].as_py(), bloom=bloom)

    def may_contain(self, pks: pa.Array | pa.ChunkedArray) -> BoolArray:
        """One bool per key: False means no row of these stats has that key.

        Raises:
            InvalidArgument: the keys' type differs from the stats' PK type, or a key is null.
        """
        if key_type_of(pks) != self.pk_type:
            raise InvalidArgument(f"stats hold {self.pk_type.name} keys, asked about {key_type_of(pks).name} keys")
        if pks.null_count:
            raise InvalidArgument("primary keys must not be null")
        result = np.zeros(len(pks), dtype=np.bool_)
        if self.rows == 0 or len(pks) == 0:
            return result
        in_range = pc.and_(pc.greater_equal(pks, self.min_pk), pc.less_equal(pks, self.max_pk))
        candidates = np.flatnonzero(np.asarray(in_range.to_numpy(zero_copy_only=False), dtype=np.bool_))
        if len(candidates):
            result[candidates] = self.bloom.may_contain(pks.take(pa.array(candidates)))
        return result

    def to_bytes(self) -> bytes:
        """The stats-log file: header, min/max, bloom length and bloom bytes (README.md)."""
        has_range = self.rows > 0
        parts = [_HEADER.pack(MAGIC, FORMAT_VERSION, int(self.pk_type), _HAS_RANGE if has_range else 0, self.rows)]
        if self.pk_type == DataType.INT64:
            low, high = (self.min_pk, self.max_pk) if has_range else (0, 0)
            parts.append(_INT_RANGE.pack(low, high))
        else:
            for value in (self.min_pk, self.max_pk):
                encoded = str(value).encode("utf-8") if has_range else b""
                parts.append(_U32.pack(len(encoded)) + encoded)
        bloom = self.bloom.to_bytes()
        parts.append(_U64.pack(len(bloom)) + bloom)
        return b"".join(parts)

    @staticmethod
    def from_bytes(data: bytes) -> SegmentStats:
        """Inverse of ``to_bytes``. Raises ``CorruptObject`` on anything malformed."""
        try:
            return _decode(memoryview(data))
        except (struct.error, UnicodeDecodeError, InvalidArgument) as err:
            raise CorruptObject(f"malformed stats log: {err}") from None


def _decode(view: memoryview) -> SegmentStats:
    magic, version, pk_type, flags, rows = _HEADER.unpack_from(view)
    if magic != MAGIC:
        raise CorruptObject(f"not a stats log (magic {bytes(magic)!r})")
    if version != FORMAT_VERSION:
        raise CorruptObject(f"unsupported stats log format version {version}")
    at = _HEADER.size
    min_pk: PrimaryKey | None
    max_pk: PrimaryKey | None
    if pk_type == DataType.INT64:
        min_pk, max_pk = _INT_RANGE.unpack_from(view, at)
        at += _INT_RANGE.size
    elif pk_type == DataType.VARCHAR:
        bounds = []
        for _ in range(2):
            (length,) = _U32.unpack_from(view, at)
            at += _U32.size
            if at + length > len(view):
                raise CorruptObject("stats log is truncated inside its min/max keys")
            bounds.append(bytes(view[at : at + length]).decode("utf-8"))
            at += length
        min_pk, max_pk = bounds
    else:
        raise CorruptObject(f"stats log has unknown primary key type {pk_type}")
    if not flags & _HAS_RANGE:
        min_pk = max_pk = None
    (bloom_length,) = _U64.unpack_from(view, at)
    at += _U64.size
    if at + bloom_length != len(view):
        raise CorruptObject(f"stats log bloom filter should be {bloom_length} bytes, found {len(view) - at}")
    bloom = PkBloomFilter.from_bytes(bytes(view[at:]))
    if bloom.key_type != pk_type:
        raise CorruptObject("stats log and its bloom filter disagree on the key type")
    return SegmentStats(rows=rows, min_pk=min_pk, max_pk=max_pk, bloom=bloom)
