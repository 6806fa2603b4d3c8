"""Search by primary keys (Milvus 2.6, ``client.search(ids=[...])``) at the proxy edge.

What pymilvus 2.6 sends for ``MilvusClient.search(ids=..., anns_field=...)``:
the same ``SearchRequest`` as a vector search, with ``ids`` (an ``IDs``:
``int_id`` or ``str_id``) and ``nq`` = the number of keys instead of a
``placeholder_group`` (the two are one ``oneof`` in milvus.proto, so a request
cannot carry both; pymilvus refuses ``ids`` with ``data`` before sending).

Milvus' semantics, which the proxy follows: the stored vectors of the given
keys in ``anns_field`` replace the query vectors, one query per key in the
given order; the keys pick the query vectors only (they do not filter the
hits: a key's own row is found like any other). The vectors are read like a
``query`` with ``output_fields=[anns_field]`` would read them: at the search's
guarantee timestamp, from the search's partitions, deleted and expired rows
left out. A key not found there is an error naming it. Hybrid search and
search iterators do not take keys (as in Milvus).

This module is pure: it reads the keys off the request and turns the
``FieldData`` a query would return for the anns field into the
``PlaceholderGroup`` a client would have sent, so the vectors go through the
same decoding (and checks) as a client's. The lookup itself is in
:mod:`proxy.pksearch`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from proxy.convert.ids import ids_from_proto

PrimaryKeys = tuple[int, ...] | tuple[str, ...]
ITERATOR_KEYS = ("iterator", "search_iter_v2")
_PH = common_pb2.PlaceholderType


def _split(payload: bytes, width: int) -> list[bytes]:
    if width <= 0:
        raise ValueError("a vector row width must be positive")
    return [payload[i : i + width] for i in range(0, len(payload), width)]


def _float_rows(fd: schema_pb2.FieldData) -> list[bytes]:
    # Each row's little-endian float32 bytes, as pymilvus sends a float query vector.
    return _split(np.asarray(fd.vectors.float_vector.data, dtype="<f4").tobytes(), fd.vectors.dim * 4)


# Per vector type: the placeholder type a client sends and how to cut the FieldData a query
# returns into one placeholder value per row. A new vector type needs one line here.
_ROWS: dict[DataType, tuple[int, Callable[[schema_pb2.FieldData], list[bytes]]]] = {
    DataType.FLOAT_VECTOR: (_PH.FloatVector, _float_rows),
    DataType.BINARY_VECTOR: (_PH.BinaryVector, lambda fd: _split(fd.vectors.binary_vector, fd.vectors.dim // 8)),
    DataType.FLOAT16_VECTOR: (_PH.Float16Vector, lambda fd: _split(fd.vectors.float16_vector, fd.vectors.dim * 2)),
    DataType.BFLOAT16_VECTOR: (_PH.BFloat16Vector, lambda fd: _split(fd.vectors.bfloat16_vector, fd.vectors.dim * 2)),
    DataType.SPARSE_FLOAT_VECTOR: (_PH.SparseFloatVector, lambda fd: list(fd.vectors.sparse_float_vector.contents)),
}
_INT8_VECTOR = getattr(DataType, "INT8_VECTOR", None)
if _INT8_VECTOR is not None:  # this build may not know the type yet
    _ROWS[_INT8_VECTOR] = (_PH.Int8Vector, lambda fd: _split(fd.vectors.int8_vector, fd.vectors.dim))


def search_primary_keys(
    req: milvus_pb2.SearchRequest, schema: CollectionSchema, *, max_nq: int
) -> PrimaryKeys | None:
    """The keys of a search by primary keys, checked; ``None`` for a search by vectors.

    Raises:
        InvalidArgument: no keys, keys of the
            wrong type, a key given twice, more keys than ``max_nq``, or keys
            together with an iterator.
    """
    if not req.HasField("ids"):
        if req.search_by_primary_keys:
            raise InvalidArgument("`ids` value [] is illegal")
        return None
    kv = {p.key: p.value for p in req.search_params}
    if any(kv.get(key, "").strip().lower() in ("true", "1") for key in ITERATOR_KEYS):
        raise InvalidArgument("search by primary keys is not supported by search iterators")
    pk = schema.primary_field
    which = req.ids.WhichOneof("id_field")
    keys = ids_from_proto(req.ids)
    if not keys:
        raise InvalidArgument("`ids` value [] is illegal")
    wanted = "int_id" if pk.dtype == DataType.INT64 else "str_id"
    if which != wanted:
        kind = "int64" if pk.dtype == DataType.INT64 else "varchar"
        raise InvalidArgument(f"primary key is {kind}, but IDs type mismatch")
    if not 1 <= len(keys) <= max_nq:
        raise InvalidArgument(
            f"nq [{len(keys)}] is invalid, nq (number of search vector per search request) "
            f"should be in range [1, {max_nq}], but got {len(keys)}"
        )
    seen: set[int | str] = set()
    twice: list[int | str] = []
    for k in keys:
        if k in seen:
            twice.append(k)
        seen.add(k)
    if twice:
        raise InvalidArgument(f"duplicate primary key IDs in search by IDs: {twice}")
    if req.nq and req.nq != len(keys):
        raise InvalidArgument(
            f"nq ({req.nq}) of the request does not match the number of primary key IDs ({len(keys)})"
        )
    return cast(PrimaryKeys, tuple(keys))  # all ints or all strs, as ``keys``


def check_no_primary_keys(req: milvus_pb2.SearchRequest) -> None:
    """A hybrid search's sub request carries vectors (Milvus: search by IDs is no hybrid search).

    Raises:
        InvalidArgument: the sub request names primary keys.
    """
    if req.HasField("ids") or req.search_by_primary_keys:
        raise InvalidArgument("search by primary keys is not supported in hybrid search")


def missing_keys_error(missing: Sequence[int | str]) -> InvalidArgument:
    """Milvus' error for keys that are not in the collection (or deleted, or outside the partitions)."""
    shown = ", ".join(str(k) for k in missing[:20]) + (", ..." if len(missing) > 20 else "")
    return InvalidArgument(f"some of the provided primary key IDs do not exist: missing IDs = [{shown}]")


def placeholder_from_field_data(fd: schema_pb2.FieldData, dtype: DataType, keys: Sequence[int | str]) -> bytes:
    """The serialised ``PlaceholderGroup`` a client would send for the rows of ``fd`` (one per key).

    Raises:
        InvalidArgument: a key's vector is null (a nullable vector field),
            or the field's type cannot be searched by primary keys.
    """
    if len(fd.valid_data) and not all(fd.valid_data):
        nulls = [k for k, valid in zip(keys, fd.valid_data, strict=True) if not valid]
        raise InvalidArgument(
            f"the vector of field {fd.field_name} is null for primary key IDs {nulls}: "
            f"they cannot be searched by"
        )
    try:
        placeholder_type, rows = _ROWS[dtype]
    except KeyError:
        raise InvalidArgument(f"search by primary keys does not support fields of type {dtype.name}") from None
    values = rows(fd)
    if len(values) != len(keys):
        raise ValueError(f"{len(values)} vectors read for {len(keys)} primary keys")
    group = common_pb2.PlaceholderGroup()
    group.placeholders.add(tag="$0", type=placeholder_type, values=values)
    return group.SerializeToString()
