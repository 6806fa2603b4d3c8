"""Index parameters and search metrics per vector type: defaults, and Milvus' refusals."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from common.schema import DataType, FieldSchema
from proxy.vectorindex import search_metric, vector_index_params

BINARY = FieldSchema(field_id=101, name="bits", dtype=DataType.BINARY_VECTOR, dim=64)
FLOAT = FieldSchema(field_id=102, name="vec", dtype=DataType.FLOAT_VECTOR, dim=8)
SPARSE = FieldSchema(field_id=103, name="sparse", dtype=DataType.SPARSE_FLOAT_VECTOR)


def test_defaults_are_hamming_and_cosine_with_autoindex() -> None:
    assert vector_index_params(BINARY, {}) == {"metric_type": "HAMMING", "index_type": "AUTOINDEX"}
    assert vector_index_params(FLOAT, {"metric_type": ""}) == {"metric_type": "COSINE", "index_type": "AUTOINDEX"}
    kept = vector_index_params(BINARY, {"metric_type": "jaccard", "index_type": "BIN_IVF_FLAT", "params": '{"nlist": 8}'})
    assert kept == {"metric_type": "JACCARD", "index_type": "BIN_IVF_FLAT", "params": '{"nlist": 8}'}


@pytest.mark.parametrize(
    ("field", "params", "message"),
    [
        (BINARY, {"metric_type": "L2"}, "binary vector index does not support metric type: L2"),
        (FLOAT, {"metric_type": "HAMMING"}, "float vector index does not support metric type: HAMMING"),
        (BINARY, {"index_type": "HNSW"}, "data type BinaryVector can't build with this index HNSW"),
        (FLOAT, {"index_type": "BIN_IVF_FLAT", "metric_type": "L2"}, "data type FloatVector can't build"),
        (BINARY, {"index_type": "BIN_IVF_FLAT", "params": '{"nlist": 0}'}, "nlist must be in"),
    ],
)
def test_bad_combinations_are_refused(field: FieldSchema, params: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        vector_index_params(field, params)


def test_search_metrics() -> None:
    assert search_metric(BINARY, "", None) == "HAMMING"
    assert search_metric(BINARY, "JACCARD", None) == "JACCARD"
    assert search_metric(BINARY, "JACCARD", "jaccard") == "JACCARD"
    assert search_metric(FLOAT, "", "ip") == "IP"
    with pytest.raises(InvalidArgument, match=r"metric type not match: invalid parameter\[expected=JACCARD\]"):
        search_metric(BINARY, "JACCARD", "HAMMING")
    with pytest.raises(InvalidArgument, match="binary vector field bits does not support metric type: L2"):
        search_metric(BINARY, "", "L2")
    with pytest.raises(InvalidArgument, match="float vector field vec does not support metric type: HAMMING"):
        search_metric(FLOAT, "", "HAMMING")


def test_bm25_belongs_to_bm25_function_outputs_only() -> None:
    assert vector_index_params(SPARSE, {}, bm25=True) == {"metric_type": "BM25", "index_type": "AUTOINDEX"}
    assert vector_index_params(SPARSE, {}) == {"metric_type": "IP", "index_type": "AUTOINDEX"}
    with pytest.raises(InvalidArgument, match="only BM25 Function output field support BM25 metric type"):
        vector_index_params(SPARSE, {"metric_type": "BM25"})
    with pytest.raises(InvalidArgument, match="only supports the BM25 metric type"):
        vector_index_params(SPARSE, {"metric_type": "IP"}, bm25=True)
    with pytest.raises(InvalidArgument, match=r"param 'bm25_k1' \(7\) should be in range"):
        vector_index_params(SPARSE, {"index_type": "SPARSE_INVERTED_INDEX", "params": '{"bm25_k1": 7}'}, bm25=True)
    assert search_metric(SPARSE, "", None, bm25=True) == "BM25"
    assert search_metric(SPARSE, "BM25", "bm25", bm25=True) == "BM25"
    with pytest.raises(InvalidArgument, match="only supports the BM25 metric type"):
        search_metric(SPARSE, "", "IP", bm25=True)
