"""Sparse float vectors at the proxy edge, with the messages pymilvus builds and parses: the schema (no dim),
rows inserted as dicts, pair lists and scipy rows, query and search results exact, placeholders, refusals."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.abstract import CollectionSchema as DescribedSchema
from pymilvus.client.prepare import Prepare
from pymilvus.client.search_result import SearchResult
from pymilvus.grpc_gen import milvus_pb2, schema_pb2
from scipy.sparse import coo_matrix, csr_matrix

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from proxy.convert import (
    build_query_results,
    build_search_results,
    insert_to_table,
    parse_search_request,
    schema_from_proto,
    schema_to_proto,
)
from segcore.segments.sparse_rows import PAIR, unpad_queries
from tests.segcore.segments.sparse_reference import as_dicts


def domain() -> CollectionSchema:
    s = MilvusClient.create_schema()
    s.add_field("id", PmType.INT64, is_primary=True)
    s.add_field("sv", PmType.SPARSE_FLOAT_VECTOR)
    return schema_from_proto(Prepare.get_schema_from_collection_schema("c", s), collection_name="c")


def insert(schema: CollectionSchema, rows: list[dict[str, Any]]) -> pa.Table:
    described = DescribedSchema(milvus_pb2.DescribeCollectionResponse(schema=schema_to_proto(schema))).dict()
    req = Prepare.row_insert_param("c", rows, "", described["fields"], enable_dynamic=False)
    return insert_to_table(req.fields_data, req.num_rows, schema)


def test_the_schema_has_no_dim_and_a_binary_column() -> None:
    field = domain().field("sv")
    assert field.dtype == DataType.SPARSE_FLOAT_VECTOR and field.dim == 0 and field.arrow_type() == pa.binary()
    assert schema_to_proto(domain()).fields[1].data_type == schema_pb2.SparseFloatVector


def test_every_input_form_is_stored_as_sorted_pairs_and_returned_exactly() -> None:
    schema = domain()
    third = np.float32(1 / 3)
    rows = [
        {"id": 0, "sv": {9: 0.5, 2: float(third)}},
        {"id": 1, "sv": [(7, 1.0), (1, 2.0)]},
        {"id": 2, "sv": csr_matrix(([4.0, 5.0], ([0, 0], [3, 30])), shape=(1, 40))},
        {"id": 3, "sv": coo_matrix(([6.0], ([0], [0])), shape=(1, 1))},
        {"id": 4, "sv": {}},
    ]
    table = insert(schema, rows)
    column = table.column("sv").combine_chunks()
    assert column.type == pa.binary()
    assert column[0].as_py() == struct.pack("<IfIf", 2, third, 9, 0.5)
    want = [{2: third, 9: 0.5}, {1: 2.0, 7: 1.0}, {3: 4.0, 30: 5.0}, {0: 6.0}, {}]
    out = build_query_results(table, schema, ["sv"])
    [fd] = [f for f in out.fields_data if f.field_name == "sv"]
    assert fd.vectors.sparse_float_vector.dim == 31
    hits = table.take([2, 0]).append_column("query", pa.array([0, 0], pa.int32()))
    hits = hits.append_column("distance", pa.array([2.0, 1.0], pa.float32()))
    result = SearchResult(build_search_results(hits, 1, 2, schema, ["sv"]))
    assert [h["entity"]["sv"] for h in result[0]] == [want[2], want[0]]
    got = [np.frombuffer(c, PAIR) for c in fd.vectors.sparse_float_vector.contents]
    assert [dict(zip(g["index"].tolist(), g["value"].tolist(), strict=True)) for g in got] == want


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1: -1.0}, "negative value"),
        ({1: float("inf")}, r"nan or \+/-inf"),
        ([(5, 1.0), (5, 1.0)], "unsorted or same indices"),
    ],
)
def test_bad_rows_are_refused(value: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        insert(domain(), [{"id": 0, "sv": value}])


def test_a_row_of_broken_bytes_is_refused() -> None:
    schema = domain()
    fd = schema_pb2.FieldData(type=schema_pb2.SparseFloatVector, field_name="sv")
    fd.vectors.sparse_float_vector.contents.append(b"\x01\x02\x03")
    ids = schema_pb2.FieldData(type=schema_pb2.Int64, field_name="id")
    ids.scalars.long_data.data.append(1)
    with pytest.raises(InvalidArgument, match="invalid data length in sparse float vector: 3"):
        insert_to_table([ids, fd], 1, schema)


def _search_request(data: Any, **param: Any) -> milvus_pb2.SearchRequest:
    return Prepare.search_requests_with_expr(
        collection_name="c", anns_field="sv", param={"metric_type": "IP", **param}, limit=10, data=data
    )


def test_placeholders_decode_to_a_padded_batch_and_params_are_checked() -> None:
    schema = domain()
    spec = parse_search_request(_search_request([{3: 1.0, 1: 0.5}, {}, {7: 2.0}],
                                                params={"drop_ratio_search": "0.2"}), schema)
    assert spec.vectors.dtype == PAIR and spec.nq == 3
    assert as_dicts(unpad_queries(spec.vectors)) == [{1: 0.5, 3: 1.0}, {}, {7: 2.0}]
    assert spec.params["drop_ratio_search"] == 0.2
    spec = parse_search_request(_search_request(csr_matrix(([1.0, 2.0], ([0, 1], [4, 5])), shape=(2, 6))), schema)
    assert as_dicts(unpad_queries(spec.vectors)) == [{4: 1.0}, {5: 2.0}]
    with pytest.raises(InvalidArgument, match=r"param 'drop_ratio_search' \(1\) should be in range \[0.0, 1.0\)"):
        parse_search_request(_search_request([{1: 1.0}], params={"drop_ratio_search": 1}), schema)
    with pytest.raises(InvalidArgument, match="dim_max_score_ratio"):
        parse_search_request(_search_request([{1: 1.0}], params={"dim_max_score_ratio": 0.1}), schema)
    with pytest.raises(InvalidArgument, match="search data type FloatVector does not match the type SparseFloatVector"):
        parse_search_request(_search_request([[0.1, 0.2]]), schema)
    with pytest.raises(InvalidArgument, match="negative value"):
        parse_search_request(_search_request([{1: -1.0}]), schema)
