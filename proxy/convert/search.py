"""Search requests at the proxy edge: ``SearchRequest`` -> ``SearchSpec``.

What pymilvus sends for ``MilvusClient.search``: ``search_params`` as string
key/values (``topk``, ``round_decimal``, ``ignore_growing``, optional
``offset``, ``metric_type``, ``anns_field``, and ``params``: a JSON object
holding every search parameter flattened, ``metric_type`` and ``radius``
included), the query vectors as a serialised ``PlaceholderGroup`` with one
``FloatVector`` placeholder (each value the little-endian float32 bytes of one
vector) or, for a binary vector field, one ``BinaryVector`` placeholder (each
value the ``dim / 8`` bytes of one vector, as the client passed them), the
filter in ``dsl`` and its ``{name}`` values in
``expr_template_values``. A grouping search adds ``group_by_field``,
``group_size`` and ``strict_group_size`` as top-level search_params (a client
may also put them inside ``params``).

The results go back in ``search_results.py``; the filter's template values are read in
``templates.py``; the checks made once the index is known are in ``search_checks.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.config import DEFAULT_LIMITS, ProxyLimits
from common.errors import InvalidArgument
from common.jsonvalue import load_json
from common.schema import CollectionSchema, DataType, FieldSchema
from proxy.convert import narrow
from proxy.convert.pkids import PrimaryKeys, search_primary_keys
from proxy.convert.schema import type_name
from proxy.convert.search_checks import check_range
from proxy.convert.sparse import check_sparse_search_params, sparse_queries
from proxy.convert.templates import template_values_to_python
from proxy.convert.text_search import text_queries

# Milvus's defaults of quotaAndLimits.limits.topK and .nq; a proxy's own are in ProxyLimits.
TOPK_LIMIT = DEFAULT_LIMITS.max_topk
GROUP_SIZE_LIMIT = 1024
EF_LIMIT = 2**31 - 1
NQ_LIMIT = DEFAULT_LIMITS.max_nq

# Keys pymilvus repeats inside ``params`` that the spec carries on its own.
_TOP_LEVEL_KEYS = frozenset(
    {
        "topk",
        "limit",
        "offset",
        "metric_type",
        "round_decimal",
        "ignore_growing",
        "anns_field",
        "group_by_field",
        "group_size",
        "strict_group_size",
    }
)
_UNSUPPORTED_KEYS = ("order_by_fields",)
# Types a search can group by (Milvus: integers, strings and booleans).
GROUP_BY_TYPES = frozenset(
    {
        DataType.BOOL,
        DataType.INT8,
        DataType.INT16,
        DataType.INT32,
        DataType.INT64,
        DataType.VARCHAR,
    }
)
# knowhere's bounds on an IVF search's nprobe, SCANN's reorder_k and IVF_RABITQ's rbq_query_bits.
NPROBE_LIMIT = 65536
REORDER_K_LIMIT = 2**31 - 1
RBQ_QUERY_BITS_LIMIT = 8
_NO_VECTORS = np.empty((0, 0), dtype=np.float32)
_INT_SEARCH_PARAMS = (
    ("nprobe", 1, NPROBE_LIMIT),
    ("reorder_k", 1, REORDER_K_LIMIT),
    ("rbq_query_bits", 0, RBQ_QUERY_BITS_LIMIT),
    ("search_list", 1, REORDER_K_LIMIT),  # DISKANN's; at least topk once the index is known
    ("search_list_size", 1, REORDER_K_LIMIT),  # knowhere's name of it
)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SearchSpec:
    """One ANN search as the proxy understood it (no protobuf past this point)."""

    vectors: np.ndarray
    """Query vectors: float32 ``(nq, dim)``, or uint8 codes ``(nq, dim / 8)`` for a binary vector field.

    Empty in a search by primary keys until the keys' vectors are read (:mod:`.pkids`)."""
    anns_field: str
    topk: int
    offset: int = 0
    metric_type: str | None = None
    """Upper-cased, ``None`` when the client left it to the index."""
    params: dict[str, Any] = field(default_factory=dict)
    """Index search parameters (``ef``, ``nprobe``, ``radius``, ...), as sent.

    ``ef``, ``nprobe``, ``reorder_k`` and ``rbq_query_bits``, when present, have
    been checked and made ``int``s, ``refine_k`` a ``float``."""
    radius: float | None = None
    """Range search's outer bound: L2 keeps ``d < radius``, IP/COSINE ``d > radius``."""
    range_filter: float | None = None
    """Range search's inner bound: L2 keeps ``d >= range_filter``, IP/COSINE
    ``d <= range_filter``. Only ever set together with ``radius``."""
    group_by_field: str | None = None
    """Scalar field (Bool, Int*, VarChar) whose value groups the hits; ``topk``
    and ``offset`` then count groups, not hits."""
    group_size: int = 1
    """Hits kept per group, best first (1 unless grouping)."""
    strict_group_size: bool = False
    """Ask the segment search to try to fill every group to ``group_size``
    (Milvus never drops a group for being short)."""
    round_decimal: int = -1
    ignore_growing: bool = False
    filter: str = ""
    filter_params: dict[str, Any] = field(default_factory=dict)
    output_fields: tuple[str, ...] = ()
    partition_names: tuple[str, ...] = ()
    guarantee_timestamp: int = 0
    consistency_level: int = 0
    use_default_consistency: bool = False
    primary_keys: PrimaryKeys | None = None
    """A search by primary keys: the keys whose ``anns_field`` vectors are the queries, in order."""

    @property
    def nq(self) -> int:
        return len(self.primary_keys) if self.primary_keys else int(self.vectors.shape[0])

    @property
    def limit(self) -> int:
        return self.topk


def parse_search_request(
    req: milvus_pb2.SearchRequest, schema: CollectionSchema, limits: ProxyLimits = DEFAULT_LIMITS
) -> SearchSpec:
    """Validate a ``SearchRequest`` against the schema and ``limits`` (topk, nq) and decode it.

    Raises:
        InvalidArgument: bad parameters, an unknown or non-vector ``anns_field``,
            vectors of the wrong type or dimension, a bad group by or range
            search, or a feature this build does not serve (ranker, order
            by, search by primary keys).
    """
    if len(req.sub_reqs) > 0:
        raise InvalidArgument("hybrid search through sub requests is not supported yet")
    if req.HasField("function_score") and len(req.function_score.functions) > 0:
        raise InvalidArgument("search with a ranker (function_score) is not supported yet")
    keys = search_primary_keys(req, schema, max_nq=limits.max_nq)

    kv = {p.key: p.value for p in req.search_params}
    params = _parse_params(kv.get("params", ""))
    for key in _UNSUPPORTED_KEYS:
        if kv.get(key) or params.get(key):
            raise InvalidArgument(f"search parameter {key} is not supported yet")

    raw_topk = kv.get("topk", kv.get("limit"))
    if raw_topk is None:
        raise InvalidArgument("topk not found in search_params")
    topk = _parse_int("topk", raw_topk)
    max_topk = limits.max_topk
    if not 1 <= topk <= max_topk:
        raise InvalidArgument(f"topk [{topk}] is invalid, it should be in range [1, {max_topk}], but got {topk}")
    offset = _parse_int("offset", kv.get("offset", params.get("offset", 0)))
    if offset < 0:
        raise InvalidArgument(f"offset [{offset}] is invalid, it should be non-negative")
    if topk + offset > max_topk:
        raise InvalidArgument(
            f"offset+topk [{topk + offset}] is invalid, it should be in range [1, {max_topk}], "
            f"but got {topk + offset}"
        )
    if req.nq and keys is None:  # told before the vectors are decoded: refuse too many at once
        _check_nq(req.nq, limits)
    round_decimal = _parse_int("round_decimal", kv.get("round_decimal", -1))
    if round_decimal != -1 and not 0 <= round_decimal <= 6:
        raise InvalidArgument(
            f"round_decimal {round_decimal} is invalid, should be -1 or an integer in range [0, 6]"
        )
    metric = str(kv.get("metric_type") or params.get("metric_type") or "").strip().upper()
    radius = _optional_float("radius", params.get("radius"))
    range_filter = _optional_float("range_filter", params.get("range_filter"))
    check_range(metric, radius, range_filter)
    group_by, group_size, strict = _grouping(schema, kv, params)
    index_params = {k: v for k, v in params.items() if k not in _TOP_LEVEL_KEYS}
    if "ef" in index_params:
        index_params["ef"] = _parse_ef(index_params["ef"])
    for key, low, high in _INT_SEARCH_PARAMS:
        if key in index_params:
            index_params[key] = _parse_int_in(key, index_params[key], low, high)
    if "refine_k" in index_params:
        index_params["refine_k"] = _parse_refine_k(index_params["refine_k"])
    check_sparse_search_params(index_params)

    anns = _anns_field(schema, kv.get("anns_field", "").strip(), by_keys=keys is not None)
    vectors = _NO_VECTORS if keys is not None else _decode_vectors(req.placeholder_group, anns, limits, schema)
    if req.nq and keys is None and req.nq != vectors.shape[0]:
        raise InvalidArgument(
            f"nq ({req.nq}) of the request does not match the number of search vectors "
            f"({vectors.shape[0]})"
        )
    return SearchSpec(
        vectors=vectors,
        anns_field=anns.name,
        topk=topk,
        offset=offset,
        metric_type=metric or None,
        params=index_params,
        radius=radius,
        range_filter=range_filter,
        group_by_field=group_by,
        group_size=group_size,
        strict_group_size=strict,
        round_decimal=round_decimal,
        ignore_growing=parse_bool("ignore_growing", kv.get("ignore_growing", "false")),
        filter=req.dsl,
        filter_params=template_values_to_python(req.expr_template_values),
        output_fields=tuple(req.output_fields),
        partition_names=tuple(req.partition_names),
        guarantee_timestamp=req.guarantee_timestamp,
        consistency_level=int(req.consistency_level),
        use_default_consistency=req.use_default_consistency,
        primary_keys=keys,
    )


def with_key_vectors(
    spec: SearchSpec, placeholder_group: bytes, schema: CollectionSchema, limits: ProxyLimits = DEFAULT_LIMITS
) -> SearchSpec:
    """A search by primary keys given its keys' vectors (a placeholder group, as a client sends one)."""
    vectors = _decode_vectors(placeholder_group, schema.field(spec.anns_field), limits)
    return replace(spec, vectors=vectors, primary_keys=None)


def _parse_params(raw: str) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        params = load_json(raw)
    except ValueError as err:
        raise InvalidArgument(f"search params is not valid JSON: {err}") from None
    if not isinstance(params, dict):
        raise InvalidArgument("search params must be a JSON object")
    return params


def _parse_int(key: str, raw: Any) -> int:
    if isinstance(raw, bool):
        raise InvalidArgument(f"{key} [{raw}] is invalid, it should be an integer")
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{key} [{raw}] is invalid, it should be an integer") from None


def parse_bool(key: str, raw: Any) -> bool:
    """A boolean request parameter (``true``/``false``, any case, or ``1``/``0``)."""
    text = str(raw).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0", ""):
        return False
    raise InvalidArgument(f"{key} [{raw}] is invalid, it should be true or false")


def _optional_float(key: str, raw: Any) -> float | None:
    return None if raw is None else parse_number(key, raw)


def parse_number(what: str, raw: Any) -> float:
    """``raw`` as a float; a bool, NaN or anything else refused: "``what`` [raw] is invalid, it should be a number"."""
    message = f"{what} [{raw}] is invalid, it should be a number"
    if isinstance(raw, bool):
        raise InvalidArgument(message)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(message) from None
    if math.isnan(value):
        raise InvalidArgument(message)
    return value


def _setting(kv: Mapping[str, str], params: Mapping[str, Any], key: str) -> Any:
    """A search setting sent top-level (pymilvus' kwargs) or inside ``params``."""
    value = kv.get(key)
    return params.get(key) if value in (None, "") else value


def _parse_ef(raw: Any) -> int:
    message = f"param 'ef' ({raw}) should be an integer in range [1, {EF_LIMIT}]"
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
        raise InvalidArgument(message)
    try:
        ef = int(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(message) from None
    if not 1 <= ef <= EF_LIMIT:
        raise InvalidArgument(message)
    return ef


def _parse_int_in(key: str, raw: Any, low: int, high: int) -> int:
    message = f"param '{key}' ({raw}) should be an integer in range [{low}, {high}]"
    if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
        raise InvalidArgument(message)
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(message) from None
    if not low <= value <= high:
        raise InvalidArgument(message)
    return value


def _parse_refine_k(raw: Any) -> float:
    message = f"param 'refine_k' ({raw}) should be a number in range [1, float_max)"
    if isinstance(raw, bool):
        raise InvalidArgument(message)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(message) from None
    if not (math.isfinite(value) and value >= 1.0):
        raise InvalidArgument(message)
    return value


def _grouping(
    schema: CollectionSchema, kv: Mapping[str, str], params: Mapping[str, Any]
) -> tuple[str | None, int, bool]:
    """``(group_by_field, group_size, strict_group_size)`` of a search.

    ``group_size`` and ``strict_group_size`` are checked even without a
    field to group by, then reset to their defaults (Milvus ignores them).
    """
    raw_size = _setting(kv, params, "group_size")
    group_size = 1 if raw_size is None else _parse_int("group_size", raw_size)
    if not 1 <= group_size <= GROUP_SIZE_LIMIT:
        raise InvalidArgument(
            f"group_size [{group_size}] is invalid, it should be in range [1, {GROUP_SIZE_LIMIT}]"
        )
    raw_strict = _setting(kv, params, "strict_group_size")
    strict = raw_strict is not None and parse_bool("strict_group_size", raw_strict)
    name = str(_setting(kv, params, "group_by_field") or "").strip()
    if not name:
        return None, 1, False
    _check_group_by_field(schema, name)
    return name, group_size, strict


def _check_group_by_field(schema: CollectionSchema, name: str) -> None:
    if not schema.has_field(name):
        raise InvalidArgument(
            f"group_by_field `{name}` does not exist in collection {schema.name}"
        )
    group_by = schema.field(name)
    if group_by.dtype not in GROUP_BY_TYPES or group_by.is_dynamic:
        raise InvalidArgument(
            f"group_by_field `{name}` of type {type_name(group_by.dtype)} is not supported, "
            f"search can group by Bool, Int8, Int16, Int32, Int64 or VarChar fields only"
        )


def _anns_field(schema: CollectionSchema, name: str, *, by_keys: bool = False) -> FieldSchema:
    if not name:
        vectors = schema.vector_fields
        if len(vectors) != 1 and by_keys:
            raise InvalidArgument("anns_field is required for search by IDs")
        if len(vectors) != 1:
            raise InvalidArgument(
                "multiple anns_fields exist, please specify a anns_field in search_params"
            )
        return vectors[0]
    if not schema.has_field(name):
        raise InvalidArgument(f"anns field `{name}` does not exist in collection {schema.name}")
    anns = schema.field(name)
    if not anns.dtype.is_vector:
        raise InvalidArgument(
            f"anns field `{name}` is not a vector field (it is {type_name(anns.dtype)})"
        )
    return anns


def _check_nq(nq: int, limits: ProxyLimits) -> None:
    if not 1 <= nq <= limits.max_nq:
        raise InvalidArgument(
            f"nq [{nq}] is invalid, nq (number of search vector per search request) "
            f"should be in range [1, {limits.max_nq}], but got {nq}"
        )


def _decode_vectors(
    raw: bytes, anns: FieldSchema, limits: ProxyLimits, schema: CollectionSchema | None = None
) -> np.ndarray:
    if not raw:
        raise InvalidArgument("the search request carries no vectors")
    group = common_pb2.PlaceholderGroup()
    try:
        group.ParseFromString(raw)
    except DecodeError:
        raise InvalidArgument("the search vectors (placeholder group) cannot be decoded") from None
    if len(group.placeholders) != 1:
        raise InvalidArgument(
            f"expected one placeholder of search vectors, got {len(group.placeholders)}"
        )
    holder = group.placeholders[0]
    if holder.type == common_pb2.PlaceholderType.VarChar:  # full-text search: texts, analyzed here
        _check_nq(len(holder.values), limits)
        return text_queries(schema, anns, holder.values)
    if anns.dtype.is_narrow_vector:
        _check_nq(len(holder.values), limits)
        return narrow.search_vectors(holder.type, holder.values, anns)
    binary = anns.dtype == DataType.BINARY_VECTOR
    expected = common_pb2.PlaceholderType.BinaryVector if binary else common_pb2.PlaceholderType.FloatVector
    if anns.dtype == DataType.SPARSE_FLOAT_VECTOR:
        expected = common_pb2.PlaceholderType.SparseFloatVector
    if holder.type != expected:
        got = common_pb2.PlaceholderType.Name(holder.type)
        raise InvalidArgument(
            f"search data type {got} does not match the type "
            f"{type_name(anns.dtype)} of anns field ({anns.name})"
        )
    nq = len(holder.values)
    _check_nq(nq, limits)
    if anns.dtype == DataType.SPARSE_FLOAT_VECTOR:
        return sparse_queries(holder.values)
    if binary:
        return _binary_codes(holder.values, anns)
    width = anns.dim * 4
    for value in holder.values:
        if len(value) != width:
            got = f"{len(value) // 4}" if len(value) % 4 == 0 else f"{len(value)} bytes"
            raise InvalidArgument(
                f"the dim ({got}) of search data is not equal to schema dim ({anns.dim}) "
                f"of anns field ({anns.name})"
            )
    flat = np.frombuffer(b"".join(holder.values), dtype="<f4")
    if not np.isfinite(flat).all():
        raise InvalidArgument(f"search data of field ({anns.name}) contains NaN or Inf")
    return flat.astype(np.float32).reshape(nq, anns.dim)


def _binary_codes(values: Sequence[bytes], anns: FieldSchema) -> np.ndarray:
    width = anns.code_size
    for value in values:
        if len(value) != width:
            raise InvalidArgument(
                f"the dim ({len(value) * 8}) of search data is not equal to schema dim ({anns.dim}) "
                f"of anns field ({anns.name})"
            )
    return np.frombuffer(b"".join(values), dtype=np.uint8).reshape(len(values), width).copy()
