"""Vector index parameters and search metrics per vector type, as Milvus' proxy checks them.

A float vector field's metric defaults to COSINE, a binary one's to HAMMING, a
sparse one's to IP (Milvus' ``FloatVectorDefaultMetricType`` /
``BinaryVectorDefaultMetricType`` / ``SparseFloatVectorDefaultMetricType``),
both for an index created without ``metric_type`` and for a search of a field
without an index; FLOAT16, BFLOAT16 and INT8 fields are float ones (an INT8 field
takes only the HNSW family). Metrics of the other vector type are refused before
anything is written, with Milvus' messages (``segcore/index/spec.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

from common.errors import InvalidArgument
from common.fulltext.index_params import check_bm25_index_params
from common.schema import DataType, FieldSchema
from proxy.convert.schema import type_name
from segcore.index.field_specs import index_spec
from segcore.segments.metric import UnknownMetricError, parse_metric

DEFAULT_FLOAT_METRIC = "COSINE"
DEFAULT_BINARY_METRIC = "HAMMING"
DEFAULT_SPARSE_METRIC = "IP"
BM25_METRIC = "BM25"


def default_metric(field: FieldSchema, *, bm25: bool = False) -> str:
    """The metric a vector field is searched and indexed with when none is given (``bm25``: the
    field is a BM25 function's output, searched with BM25 only)."""
    if bm25:
        return BM25_METRIC
    if field.dtype.is_sparse_vector:
        return DEFAULT_SPARSE_METRIC
    return DEFAULT_BINARY_METRIC if field.dtype.is_binary_vector else DEFAULT_FLOAT_METRIC


def vector_index_params(field: FieldSchema, params: Mapping[str, str], *, bm25: bool = False) -> dict[str, str]:
    """A ``CreateIndex`` request's params for a vector field: the metric (upper case, the field's
    default when missing) and ``index_type`` (AUTOINDEX when missing) filled in, then checked.

    Raises:
        InvalidArgument: a metric or index type the field's vector type does not have, a bad
            build parameter, or an ``m`` / ``sub_dim`` that does not divide the field's dimension;
            the message is Milvus' and names it.
    """
    out = dict(params)
    out["metric_type"] = (out.get("metric_type") or default_metric(field, bm25=bm25)).strip().upper()
    if bm25 != (out["metric_type"] == BM25_METRIC):
        raise InvalidArgument(
            f"BM25 function output field {field.name} only supports the BM25 metric type"
            if bm25 else f"only BM25 Function output field support BM25 metric type: field {field.name}"
        )
    if bm25:
        check_bm25_index_params(out)
    out.setdefault("index_type", "AUTOINDEX")
    # Also refused: a faiss kind the field's dimension does not fit (IVF_PQ's m must divide it).
    dtype = field.dtype
    index_spec(
        out,
        binary=dtype.is_binary_vector,
        sparse=dtype.is_sparse_vector,
        int8=dtype == DataType.INT8_VECTOR,
        type_name=type_name(int(dtype)),
    ).check_dim(field.dim)
    return out


def search_metric(field: FieldSchema, index_metric: str, requested: str | None, *, bm25: bool = False) -> str:
    """The metric a search of ``field`` runs with: the request's, which must be the index's
    (``index_metric``, empty without an index), else the index's, else the field's default.

    Raises:
        InvalidArgument: the request's metric is not the index's, or not of the field's vector type.
    """
    wanted = (requested or "").strip().upper()
    if wanted and index_metric and wanted != index_metric:
        raise InvalidArgument(f"metric type not match: invalid parameter[expected={index_metric}][actual={wanted}]")
    metric = wanted or index_metric or default_metric(field, bm25=bm25)
    if bm25 and metric != BM25_METRIC:
        raise InvalidArgument(f"BM25 function output field {field.name} only supports the BM25 metric type, not {metric}")
    if bm25:
        return metric
    if field.dtype.is_sparse_vector:
        if metric != "IP":
            raise InvalidArgument(f"sparse vector field {field.name} does not support metric type: {metric}")
        return metric
    try:
        parsed = parse_metric(metric)
    except UnknownMetricError:
        parsed = None
    binary = field.dtype.is_binary_vector
    if parsed is None or parsed.is_binary != binary:
        kind = "binary" if binary else "float"
        raise InvalidArgument(f"{kind} vector field {field.name} does not support metric type: {metric}")
    return metric
