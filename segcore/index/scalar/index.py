"""A built scalar index of one segment: postings (and n-grams), and what the planner needs to trust them.

Every method blocks (CPU); a build reads the whole column once, a lookup
never reads it. Immutable once built: share it between reads and threads.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from segcore.index.scalar.ngram import build_grams
from segcore.index.scalar.postings import Postings, build_postings
from segcore.index.scalar.source import index_source
from segcore.index.scalar.spec import ScalarIndexSpec, ScalarKind

_HEADER = struct.Struct("<4sBBqqq")  # magic, exact, has_nulls, postings bytes, grams bytes, converted bytes
_MAGIC = b"SSI2"
_HEADER_V1 = struct.Struct("<4sBBqq")  # before cast functions kept their converted values apart
_MAGIC_V1 = b"SSI1"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalarIndex:
    spec: ScalarIndexSpec
    postings: Postings
    grams: Postings | None = None
    #: A cast function's values converted from strings (``source.py``): kept as Milvus indexes them,
    #: never read by filters (a number compares with numbers only).
    converted: Postings | None = None
    exact: bool = True  # values compare as the scan compares them (source.py)
    has_nulls: bool = False  # the column has null rows (a predicate on it may be unknown there)
    _float_keys: list[np.ndarray] = field(default_factory=list, compare=False, repr=False)

    @property
    def num_rows(self) -> int:
        return self.postings.num_rows

    def float_keys(self) -> np.ndarray:
        """The keys as ``float64`` (integer keys compared with a float, as the scan widens them)."""
        if not self._float_keys:
            self._float_keys.append(self.postings.keys.astype(np.float64))
        return self._float_keys[0]

    def to_bytes(self) -> bytes:
        postings = self.postings.to_bytes()
        grams = b"" if self.grams is None else self.grams.to_bytes()
        converted = b"" if self.converted is None else self.converted.to_bytes()
        header = _HEADER.pack(_MAGIC, int(self.exact), int(self.has_nulls), len(postings), len(grams), len(converted))
        return header + postings + grams + converted

    @classmethod
    def from_bytes(cls, spec: ScalarIndexSpec, payload: bytes) -> ScalarIndex:
        """Raises ``ValueError`` on data that is not a scalar index (the caller builds it again)."""
        if payload[:4] == _MAGIC_V1 and not spec.json_cast_function and len(payload) >= _HEADER_V1.size:
            magic, exact, has_nulls, postings_size, grams_size = _HEADER_V1.unpack_from(payload)
            start, converted_size = _HEADER_V1.size, 0
        elif len(payload) >= _HEADER.size:
            magic, exact, has_nulls, postings_size, grams_size, converted_size = _HEADER.unpack_from(payload)
            start = _HEADER.size
            if magic != _MAGIC or bool(converted_size) != bool(spec.json_cast_function):
                raise ValueError("not a scalar index of this format")
        else:
            raise ValueError("scalar index data is truncated")
        if start + postings_size + grams_size + converted_size != len(payload):
            raise ValueError("not a scalar index of this format")
        postings = Postings.from_bytes(payload[start : start + postings_size])
        start += postings_size
        grams = Postings.from_bytes(payload[start : start + grams_size]) if grams_size else None
        start += grams_size
        converted = Postings.from_bytes(payload[start:]) if converted_size else None
        return cls(spec=spec, postings=postings, grams=grams, converted=converted, exact=bool(exact),
                   has_nulls=bool(has_nulls))


def build_scalar_index(spec: ScalarIndexSpec, table: pa.Table) -> ScalarIndex:
    """Build ``spec``'s index over every row of ``table`` (a segment's columns)."""
    source = index_source(spec, table)
    postings = build_postings(source.values, source.rows, table.num_rows)
    grams = None
    if spec.kind is ScalarKind.NGRAM and postings.is_string:
        grams = build_grams(postings.keys, spec.min_gram, spec.max_gram)
    if spec.field_name in table.column_names:
        column = table.column(spec.field_name)
        dynamic = spec.json_path is not None and spec.json_path.dynamic
        has_nulls = column.null_count > 0 and not dynamic  # a null ``$meta`` reads as {}
    else:
        has_nulls = spec.json_path is None or not spec.json_path.dynamic
    converted = None
    if source.converted is not None:
        converted = build_postings(source.converted[0], source.converted[1], table.num_rows)
    return ScalarIndex(spec=spec, postings=postings, grams=grams, converted=converted, exact=source.exact,
                       has_nulls=has_nulls)
