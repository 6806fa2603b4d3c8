"""``meta.json``: what a stored index was built from, and the commit marker of its files.

Example (format version 1)::

    {"format_version": 1, "index_type": "HNSW", "metric": "L2",
     "params": {"M": 16, "efConstruction": 200}, "field_id": 101, "dim": 128,
     "rows": 20000, "data": {"name": "graph-1f2e3d4c.bin", "size": 10485760,
     "crc32c": 523386188}}

``index_type``, ``metric`` and ``params`` are the spec's canonical form
(AUTOINDEX is stored as HNSW with its resolved parameters; the faiss kinds'
params also hold strings such as ``sq_type`` and booleans such as
``with_raw_data``). ``data`` is
``null`` when the index has no file of its own (FLAT, or HNSW of an empty
segment).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

from segcore.index.spec import IndexSpec

FORMAT_VERSION = 1

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class DataFile:
    """One data file next to ``meta.json``: its name in the index directory, size and CRC32C."""

    name: str
    size: int
    crc32c: int


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexMeta:
    format_version: int
    index_type: str
    metric: str
    params: dict[str, int | str | bool]
    field_id: int
    dim: int
    rows: int
    data: DataFile | None

    @staticmethod
    def describe(spec: IndexSpec, *, field_id: int, dim: int, rows: int, data: DataFile | None) -> IndexMeta:
        """The meta of an index built from ``spec`` over ``rows`` vectors of ``dim``."""
        canonical = spec.canonical()
        params = canonical["params"]
        assert isinstance(params, dict)
        return IndexMeta(
            format_version=FORMAT_VERSION,
            index_type=str(canonical["index_type"]),
            metric=str(canonical["metric"]),
            params=dict(params),
            field_id=field_id,
            dim=dim,
            rows=rows,
            data=data,
        )

    def differences(self, expected: IndexMeta) -> list[str]:
        """Names of the fields (other than ``data``) that differ from ``expected``."""
        names = ("format_version", "index_type", "metric", "params", "field_id", "dim", "rows")
        return [name for name in names if getattr(self, name) != getattr(expected, name)]

    def to_json(self) -> bytes:
        doc: dict[str, Any] = {
            "format_version": self.format_version,
            "index_type": self.index_type,
            "metric": self.metric,
            "params": self.params,
            "field_id": self.field_id,
            "dim": self.dim,
            "rows": self.rows,
            "data": None
            if self.data is None
            else {"name": self.data.name, "size": self.data.size, "crc32c": self.data.crc32c},
        }
        return json.dumps(doc, sort_keys=True).encode()

    @staticmethod
    def from_json(raw: bytes) -> IndexMeta:
        """Parse ``meta.json``.

        Raises:
            ValueError: not JSON, or a field is missing or of the wrong type.
        """
        doc = json.loads(raw)
        if not isinstance(doc, dict):
            raise ValueError("index meta is not a JSON object")
        params = _field(doc, "params", dict)
        if not all(isinstance(k, str) and isinstance(v, int | str) for k, v in params.items()):
            raise ValueError("index meta params must map names to integers, strings or booleans")
        data_doc = doc.get("data")
        data = None
        if data_doc is not None:
            if not isinstance(data_doc, dict):
                raise ValueError("index meta data must be an object or null")
            data = DataFile(
                name=_field(data_doc, "name", str),
                size=_int_field(data_doc, "size"),
                crc32c=_int_field(data_doc, "crc32c"),
            )
        return IndexMeta(
            format_version=_int_field(doc, "format_version"),
            index_type=_field(doc, "index_type", str),
            metric=_field(doc, "metric", str),
            params=params,
            field_id=_int_field(doc, "field_id"),
            dim=_int_field(doc, "dim"),
            rows=_int_field(doc, "rows"),
            data=data,
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _field(doc: dict[str, Any], name: str, kind: type[_T]) -> _T:
    value = doc.get(name)
    if not isinstance(value, kind):
        raise ValueError(f"index meta field {name!r} must be a {kind.__name__}, got {value!r}")
    return value


def _int_field(doc: dict[str, Any], name: str) -> int:
    value = doc.get(name)
    if not _is_int(value):
        raise ValueError(f"index meta field {name!r} must be an integer, got {value!r}")
    assert isinstance(value, int)
    return value
