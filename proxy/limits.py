"""The proxy's per-request limits (``ProxyLimits``), checked before a request costs anything.

Where each limit is applied:

* ``server_max_recv_size`` / ``server_max_send_size``: by gRPC itself on the
  proxy's server (``Proxy.start``); an oversized request is refused with
  RESOURCE_EXHAUSTED before it is read into memory.
* ``max_topk``, ``max_nq``: when a search request is decoded
  (``convert.parse_search_request``), with Milvus's messages.
* ``max_query_result_window``: a query's ``offset + limit`` (``MilvusProxy.Query``).
* ``max_expr_length``: every filter, before it is parsed (``check_expr_length``).
* ``max_output_size``: a search whose hits alone cannot fit is refused before
  it runs (``check_search_output``); any search or query answer larger than it
  is refused once built (``check_result_size``), as Milvus refuses it at its
  final reduce.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.config import ProxyLimits
from common.errors import InvalidArgument, LimitExceeded
from common.schema import CollectionSchema, DataType

# Bytes per value of fixed-width fields in a result (vectors: per dimension).
_FIXED_WIDTH = {
    DataType.BOOL: 1,
    DataType.INT8: 1,
    DataType.INT16: 2,
    DataType.INT32: 4,
    DataType.INT64: 8,
    DataType.FLOAT: 4,
    DataType.DOUBLE: 8,
    DataType.FLOAT_VECTOR: 4,
}
_SCORE_BYTES = 4
_MIN_VARCHAR_KEY_BYTES = 1


def check_expr_length(text: str, limits: ProxyLimits) -> None:
    """Refuse a filter longer than ``max_expr_length`` characters, before it is parsed."""
    if len(text) > limits.max_expr_length:
        raise InvalidArgument(
            f"the filter expression is {len(text)} characters long, more than the {limits.max_expr_length} "
            "this server accepts (proxy.max_expr_length); pass long lists as filter_params (templates)"
        )


def hit_bytes(schema: CollectionSchema, output_fields: Sequence[str]) -> int:
    """Bytes a search result takes per hit at least: its key, its score, its fixed-width outputs."""
    pk = schema.primary_field
    size = _SCORE_BYTES + _FIXED_WIDTH.get(pk.dtype, _MIN_VARCHAR_KEY_BYTES)
    for name in output_fields:
        if not schema.has_field(name) or name == pk.name:
            continue
        field = schema.field(name)
        width = _FIXED_WIDTH.get(field.dtype, 0)
        if field.dtype is DataType.BINARY_VECTOR or field.dtype.is_narrow_vector:
            width = field.code_size
        size += width * field.dim if field.dtype is DataType.FLOAT_VECTOR else width
    return size


def check_search_output(hits: int, per_hit: int, limits: ProxyLimits) -> None:
    """Refuse a search whose ``hits`` (at most nq x topk) of ``per_hit`` bytes exceed ``max_output_size``."""
    if hits * per_hit > limits.max_output_size:
        raise LimitExceeded(f"search results exceed the maxOutputSize Limit {limits.max_output_size}")


def check_result_size(kind: str, size: int, limits: ProxyLimits) -> None:
    """Refuse an answer (``kind``: search or query) of ``size`` bytes over ``max_output_size``."""
    if size > limits.max_output_size:
        raise LimitExceeded(f"{kind} results exceed the maxOutputSize Limit {limits.max_output_size}")
