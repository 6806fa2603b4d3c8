"""Binary vectors at the proxy edge, with the messages pymilvus builds and parses: the schema's dim, inserted rows,
query and search results bit-exact, search placeholders, and a float vector field beside them."""

from __future__ import annotations

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

DIM = 24  # 3 bytes per vector


def make_schema(dim: int = DIM) -> Any:
    s = MilvusClient.create_schema()
    s.add_field("id", PmType.INT64, is_primary=True)
    s.add_field("bits", PmType.BINARY_VECTOR, dim=dim)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=2)
    return s


def domain(orm: Any) -> CollectionSchema:
    return schema_from_proto(Prepare.get_schema_from_collection_schema("c", orm), collection_name="c")


def insert(schema: CollectionSchema, rows: list[dict[str, Any]]) -> pa.Table:
    described = DescribedSchema(milvus_pb2.DescribeCollectionResponse(schema=schema_to_proto(schema))).dict()
    req = Prepare.row_insert_param("c", rows, "", described["fields"], enable_dynamic=False)
    return insert_to_table(req.fields_data, req.num_rows, schema)


def codes(n: int, seed: int = 0) -> np.ndarray:
    return np.packbits(np.random.default_rng(seed).random((n, DIM)) < 0.5, axis=1)


def test_the_schema_keeps_dim_in_bits_and_the_column_dim_over_8_bytes() -> None:
    schema = domain(make_schema())
    field = schema.field("bits")
    assert field.dtype == DataType.BINARY_VECTOR and field.dim == DIM and field.code_size == 3
    assert field.arrow_type() == pa.binary(3)
    described = schema_to_proto(schema).fields[1]
    assert described.data_type == schema_pb2.BinaryVector
    assert {kv.key: kv.value for kv in described.type_params} == {"dim": str(DIM)}


@pytest.mark.parametrize(
    ("dim", "message"),
    [
        (10, "invalid dimension: 10 of field bits. binary vector dimension should be multiple of 8. "),
        (0, r"invalid dimension: 0. should be in range 2 ~ 32768"),
        (32768 * 9, r"invalid dimension: 294912 of field bits. binary vector dimension should be in range 2 ~ 262144"),
        (32768 * 8 + 1, "should be multiple of 8"),
    ],
)
def test_a_dim_that_is_no_multiple_of_8_or_too_large_is_refused(dim: int, message: str) -> None:
    pb = Prepare.get_schema_from_collection_schema("c", make_schema(8))
    for kv in pb.fields[1].type_params:
        if kv.key == "dim":
            kv.value = str(dim)
    with pytest.raises(InvalidArgument, match=message):
        schema_from_proto(pb, collection_name="c")
    assert domain(make_schema(32768 * 8)).field("bits").dim == 262144  # Milvus' largest


def test_rows_of_bytes_and_of_numpy_arrays_arrive_bit_exact() -> None:
    schema = domain(make_schema())
    data = codes(5)
    rows = [{"id": i, "bits": data[i].tobytes() if i % 2 else data[i], "vec": [0.0, 1.0]} for i in range(5)]
    table = insert(schema, rows)
    assert table.schema.field("bits").type == pa.binary(3)
    assert table.column("bits").to_pylist() == [c.tobytes() for c in data]


def test_vectors_of_the_wrong_width_are_refused() -> None:
    schema = domain(make_schema())
    fd = schema_pb2.FieldData(type=schema_pb2.BinaryVector, field_name="bits")
    fd.vectors.dim = DIM
    fd.vectors.binary_vector = b"\x01" * 7  # two rows and a byte
    ids = schema_pb2.FieldData(type=schema_pb2.Int64, field_name="id")
    ids.scalars.long_data.data.extend([1, 2])
    vec = schema_pb2.FieldData(type=schema_pb2.FloatVector, field_name="vec")
    vec.vectors.dim = 2
    vec.vectors.float_vector.data.extend([0.0] * 4)
    with pytest.raises(InvalidArgument, match=r"length \(7\) of binary vector data of field \(bits\)"):
        insert_to_table([ids, fd, vec], 2, schema)
    fd.vectors.binary_vector = b"\x01" * 6
    fd.vectors.dim = 16
    with pytest.raises(InvalidArgument, match=r"the dim \(16\) of field data\(bits\) is not equal to schema dim \(24\)"):
        insert_to_table([ids, fd, vec], 2, schema)
    fd.vectors.dim = DIM
    fd.vectors.ClearField("binary_vector")
    fd.vectors.float_vector.data.extend([0.0] * 48)
    with pytest.raises(InvalidArgument, match="expected binary_vector in the field data but got float_vector"):
        insert_to_table([ids, fd, vec], 2, schema)


def test_query_and_search_results_carry_the_codes_pymilvus_cuts_per_row() -> None:
    schema = domain(make_schema())
    data = codes(4, seed=2)
    table = insert(schema, [{"id": i, "bits": data[i].tobytes(), "vec": [1.0, 2.0]} for i in range(4)])
    out = build_query_results(table.slice(1, 2), schema, ["bits", "vec"])
    [bits] = [fd for fd in out.fields_data if fd.field_name == "bits"]
    assert bits.vectors.dim == DIM and bits.vectors.binary_vector == data[1:3].tobytes()
    hits = table.take([3, 0]).append_column("query", pa.array([0, 0], pa.int32()))
    hits = hits.append_column("distance", pa.array([2.0, 7.0], pa.float32()))
    result = SearchResult(build_search_results(hits, 1, 2, schema, ["bits"]))
    assert result[0].ids == [3, 0] and result[0].distances == [2.0, 7.0]
    assert [h["entity"]["bits"] for h in result[0]] == [data[3].tobytes(), data[0].tobytes()]


def _search_request(data: list[Any], anns_field: str = "bits", **param: Any) -> milvus_pb2.SearchRequest:
    return Prepare.search_requests_with_expr(
        collection_name="c", anns_field=anns_field, param={"metric_type": "HAMMING", **param}, limit=5, data=data
    )


def test_binary_placeholders_decode_to_codes() -> None:
    schema = domain(make_schema())
    data = codes(3, seed=5)
    spec = parse_search_request(_search_request([c.tobytes() for c in data]), schema)
    assert spec.vectors.dtype == np.uint8 and spec.vectors.shape == (3, 3) and spec.nq == 3
    np.testing.assert_array_equal(spec.vectors, data)
    spec = parse_search_request(_search_request([data[0]], params={"nprobe": 12, "radius": 9, "range_filter": 2}),
                                schema)
    assert spec.params["nprobe"] == 12 and spec.radius == 9 and spec.range_filter == 2 and spec.metric_type == "HAMMING"


def test_bad_binary_search_vectors_and_params_are_refused() -> None:
    schema = domain(make_schema())
    with pytest.raises(InvalidArgument, match=r"the dim \(16\) of search data is not equal to schema dim \(24\)"):
        parse_search_request(_search_request([b"\x00\x01"]), schema)
    with pytest.raises(InvalidArgument, match="search data type FloatVector does not match the type BinaryVector"):
        parse_search_request(_search_request([[0.1, 0.2]]), schema)
    with pytest.raises(InvalidArgument, match="search data type BinaryVector does not match the type FloatVector"):
        parse_search_request(_search_request([b"\x00\x01\x02"], anns_field="vec"), schema)
    with pytest.raises(InvalidArgument, match=r"param 'nprobe' \(0\) should be an integer in range \[1, 65536\]"):
        parse_search_request(_search_request([b"\x00\x01\x02"], params={"nprobe": 0}), schema)
    with pytest.raises(InvalidArgument, match="range_filter .* must be less than radius"):
        parse_search_request(_search_request([b"\x00\x01\x02"], params={"radius": 2, "range_filter": 5}), schema)
