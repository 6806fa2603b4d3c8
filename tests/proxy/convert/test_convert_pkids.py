"""Search by primary keys at the edge: the keys read off pymilvus' request, the checks, and the
placeholder group built from the FieldData a query returns (decoded like a client's vectors)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.prepare import Prepare
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.config import ProxyLimits
from common.errors import InvalidArgument
from common.schema import CollectionSchema
from proxy.convert import column_to_field_data, parse_search_request, schema_from_proto
from proxy.convert.pkids import (
    check_no_primary_keys,
    missing_keys_error,
    placeholder_from_field_data,
)
from proxy.convert.search import with_key_vectors


def _schema(*, pk_type: Any = PmType.INT64, two_vectors: bool = True) -> CollectionSchema:
    s = MilvusClient.create_schema()
    if pk_type == PmType.VARCHAR:
        s.add_field("pk", PmType.VARCHAR, is_primary=True, max_length=8)
    else:
        s.add_field("pk", PmType.INT64, is_primary=True)
    s.add_field("tag", PmType.INT64)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=4)
    if two_vectors:
        s.add_field("bits", PmType.BINARY_VECTOR, dim=16)
    return schema_from_proto(Prepare.get_schema_from_collection_schema("c", s), collection_name="c")


def _request(**kwargs: Any) -> milvus_pb2.SearchRequest:
    """The SearchRequest pymilvus 2.6's ``search(ids=...)`` sends."""
    args: dict[str, Any] = {"collection_name": "c", "anns_field": "vec", "param": {}, "limit": 5, "ids": [7, 3]}
    args.update(kwargs)
    return Prepare.search_requests_with_expr(**args)


def test_keys_are_read_in_order_and_the_rest_parses_as_for_vectors() -> None:
    spec = parse_search_request(
        _request(expr="tag > 1", param={"params": {"radius": 5.0, "range_filter": 1.0}}, group_by_field="tag"),
        _schema(),
    )
    assert spec.primary_keys == (7, 3)
    assert spec.nq == 2 and spec.vectors.size == 0
    assert spec.anns_field == "vec" and spec.filter == "tag > 1"
    assert (spec.radius, spec.range_filter, spec.group_by_field) == (5.0, 1.0, "tag")
    strings = parse_search_request(_request(ids=["b", "a"]), _schema(pk_type=PmType.VARCHAR))
    assert strings.primary_keys == ("b", "a")
    vectors = parse_search_request(_request(ids=None, data=[[0.1, 0.2, 0.3, 0.4]]), _schema())
    assert vectors.primary_keys is None and vectors.nq == 1


def test_bad_key_searches_are_refused() -> None:
    schema = _schema()
    with pytest.raises(InvalidArgument, match=r"primary key is int64, but IDs type mismatch"):
        parse_search_request(_request(ids=["1"]), schema)
    with pytest.raises(InvalidArgument, match=r"primary key is varchar, but IDs type mismatch"):
        parse_search_request(_request(ids=[1]), _schema(pk_type=PmType.VARCHAR))
    with pytest.raises(InvalidArgument, match=r"duplicate primary key IDs in search by IDs: \[1\]"):
        parse_search_request(_request(ids=[1, 2, 1]), schema)
    with pytest.raises(InvalidArgument, match="anns_field is required for search by IDs"):
        parse_search_request(_request(anns_field=""), schema)
    with pytest.raises(InvalidArgument, match=r"nq \[3\] is invalid"):
        parse_search_request(_request(ids=[1, 2, 3]), schema, ProxyLimits(max_nq=2))
    empty = _request()
    empty.ids.int_id.ClearField("data")
    with pytest.raises(InvalidArgument, match=r"`ids` value \[\] is illegal"):
        parse_search_request(empty, schema)
    iterator = _request(iterator="True")
    with pytest.raises(InvalidArgument, match="not supported by search iterators"):
        parse_search_request(iterator, schema)
    with pytest.raises(InvalidArgument, match="not supported in hybrid search"):
        check_no_primary_keys(_request())
    check_no_primary_keys(_request(ids=None, data=[[0.1, 0.2, 0.3, 0.4]]))


def test_a_single_vector_field_needs_no_anns_field() -> None:
    spec = parse_search_request(_request(anns_field=""), _schema(two_vectors=False))
    assert spec.anns_field == "vec"


def test_missing_keys_are_named() -> None:
    assert "missing IDs = [4, 9]" in str(missing_keys_error([4, 9]))
    assert str(missing_keys_error(list(range(30)))).endswith("19, ...]")


@pytest.mark.parametrize("field", ["vec", "bits"])
def test_placeholder_from_query_output_decodes_to_the_stored_vectors(field: str) -> None:
    schema = _schema()
    spec = parse_search_request(_request(anns_field=field, ids=[5, 6, 8]), schema)
    rng = np.random.default_rng(3)
    if field == "vec":
        stored = rng.standard_normal((3, 4)).astype(np.float32)
        column = pa.array(list(stored), type=schema.field(field).arrow_type())
    else:
        stored = rng.integers(0, 256, (3, 2), dtype=np.uint8)
        column = pa.array([row.tobytes() for row in stored], type=schema.field(field).arrow_type())
    fd = column_to_field_data(schema.field(field), column)
    group = placeholder_from_field_data(fd, schema.field(field).dtype, [5, 6, 8])
    parsed = common_pb2.PlaceholderGroup.FromString(group)
    want_type = common_pb2.PlaceholderType.FloatVector if field == "vec" else common_pb2.PlaceholderType.BinaryVector
    assert parsed.placeholders[0].type == want_type and len(parsed.placeholders[0].values) == 3
    filled = with_key_vectors(spec, group, schema)
    assert filled.primary_keys is None and filled.nq == 3
    np.testing.assert_array_equal(filled.vectors, stored)


def test_a_null_vector_cannot_be_searched_by() -> None:
    schema = _schema()
    fd = column_to_field_data(schema.field("vec"), pa.array([[1.0, 2.0, 3.0, 4.0]], type=schema.field("vec").arrow_type()))
    fd.valid_data.extend([True, False])
    with pytest.raises(InvalidArgument, match=r"null for primary key IDs \[2\]"):
        placeholder_from_field_data(fd, schema.field("vec").dtype, [1, 2])
