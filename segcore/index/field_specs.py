"""The collection's index definitions as a worker uses them (from the catalog's Milvus-style params).

pymilvus sends ``index_type``, ``metric_type`` and ``params`` (a JSON object
of build parameters such as ``M`` and ``efConstruction``); build parameters
may also come as top-level keys. Invalid values raise ``InvalidArgument``
(``segcore.index.factory``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import structlog

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from segcore.index.scalar.spec import ScalarIndexSpec, scalar_index_spec
from segcore.index.spec import IndexSpec

_META_KEYS = {"index_type", "metric_type", "params"}

log = structlog.get_logger().bind(component="index-specs")


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldIndexSpec:
    field_name: str
    index_id: int
    spec: IndexSpec | ScalarIndexSpec


def index_spec(
    params: Mapping[str, str],
    *,
    binary: bool = False,
    sparse: bool = False,
    int8: bool = False,
    type_name: str = "",
) -> IndexSpec:
    """The ``IndexSpec`` of catalog params (``index_type``, ``metric_type``, ``params`` JSON, other keys)
    for a float vector field, a binary one (``binary``: the metric defaults to HAMMING) or an
    INT8_VECTOR (``int8``: only the HNSW family)."""
    build: dict[str, str | int | float] = {k: v for k, v in params.items() if k not in _META_KEYS}
    raw = params.get("params", "")
    if raw:
        try:
            extra = json.loads(raw)
        except ValueError as err:
            raise InvalidArgument(f"invalid index params: params is not a JSON object: {raw!r}") from err
        if not isinstance(extra, dict):
            raise InvalidArgument(f"invalid index params: params is not a JSON object: {raw!r}")
        build.update(extra)
    return IndexSpec(
        index_type=params.get("index_type", "AUTOINDEX") or "AUTOINDEX",
        metric=params.get("metric_type", "") or ("HAMMING" if binary else "IP" if sparse else "L2"),
        params=build,
        binary=binary,
        sparse=sparse,
        int8=int8,
        type_name=type_name,
    )


def field_index_spec(
    field_name: str,
    index_id: int,
    params: Mapping[str, str],
    *,
    binary: bool = False,
    sparse: bool = False,
    int8: bool = False,
) -> FieldIndexSpec:
    spec = index_spec(params, binary=binary, sparse=sparse, int8=int8)
    return FieldIndexSpec(field_name=field_name, index_id=index_id, spec=spec)


def vector_index_specs(
    schema: CollectionSchema, indexes: Iterable[tuple[str, int, Mapping[str, str]]]
) -> list[FieldIndexSpec]:
    """The specs of the indexes on vector fields: ``(field_name, index_id, params)`` each.

    Indexes on other fields are left out (the proxy refuses to create them; a catalog written
    before it did may still hold one): filters on those fields scan the column.
    """
    return [
        field_index_spec(
            name,
            index_id,
            params,
            binary=schema.field(name).dtype.is_binary_vector,
            sparse=schema.field(name).dtype.is_sparse_vector,
            int8=schema.field(name).dtype == DataType.INT8_VECTOR,
        )
        for name, index_id, params in indexes
        if schema.has_field(name) and schema.field(name).dtype.is_vector
    ]


def field_index_specs(
    schema: CollectionSchema, indexes: Iterable[tuple[str, int, Mapping[str, str]]]
) -> list[FieldIndexSpec]:
    """The specs of every index a worker builds: on vector fields (``vector_index_specs``) and on
    scalar, ARRAY and JSON fields (``segcore/index/scalar``). A scalar index whose params do not
    define one (a catalog written before the proxy checked them) is left out and logged: filters on
    its field scan the column."""
    listed = list(indexes)
    specs = vector_index_specs(schema, listed)
    for name, index_id, params in listed:
        if not schema.has_field(name) or schema.field(name).dtype.is_vector:
            continue
        try:
            spec = scalar_index_spec(schema, name, params)
        except InvalidArgument as err:
            log.warning("scalar index left out", field=name, index_id=index_id, error=err.message)
            continue
        specs.append(FieldIndexSpec(field_name=name, index_id=index_id, spec=spec))
    return specs


class ListedIndex(Protocol):
    """An index as the catalog lists it (a ``querynode.proto`` ``IndexSpec``, a Spark job's ``IndexRef``)."""

    @property
    def field_name(self) -> str: ...

    @property
    def index_id(self) -> int: ...

    @property
    def params(self) -> Mapping[str, str]: ...


def listed_index_specs(schema: CollectionSchema, indexes: Iterable[ListedIndex]) -> list[FieldIndexSpec]:
    """``field_index_specs`` of indexes as the catalog lists them."""
    return field_index_specs(schema, ((i.field_name, i.index_id, dict(i.params)) for i in indexes))
