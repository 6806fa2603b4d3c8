"""FLOAT16, BFLOAT16 and INT8 vectors at the proxy edge, with the messages pymilvus 2.6 builds and parses: numpy
float16 / ml_dtypes.bfloat16 / int8 rows and float lists at insert, results bit-exact, each placeholder type."""

from __future__ import annotations

from typing import Any

import ml_dtypes
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
from proxy.vectorindex import vector_index_params

DIM = 6
TYPES = {"f16": (PmType.FLOAT16_VECTOR, np.float16), "b16": (PmType.BFLOAT16_VECTOR, ml_dtypes.bfloat16),
         "i8": (PmType.INT8_VECTOR, np.int8)}


def domain() -> CollectionSchema:
    s = MilvusClient.create_schema()
    s.add_field("id", PmType.INT64, is_primary=True)
    for name, (pm, _) in TYPES.items():
        s.add_field(name, pm, dim=DIM)
    return schema_from_proto(Prepare.get_schema_from_collection_schema("c", s), collection_name="c")


def insert(schema: CollectionSchema, rows: list[dict[str, Any]]) -> pa.Table:
    described = DescribedSchema(milvus_pb2.DescribeCollectionResponse(schema=schema_to_proto(schema))).dict()
    req = Prepare.row_insert_param("c", rows, "", described["fields"], enable_dynamic=False)
    return insert_to_table(req.fields_data, req.num_rows, schema)


def rows(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    floats = rng.standard_normal((n, DIM)) * 3
    return {"f16": floats.astype(np.float16), "b16": floats.astype(ml_dtypes.bfloat16),
            "i8": rng.integers(-128, 128, (n, DIM)).astype(np.int8)}


def test_the_schema_keeps_each_type_and_its_column_width() -> None:
    schema = domain()
    widths = {"f16": 12, "b16": 12, "i8": 6}
    for name, (pm, _) in TYPES.items():
        f = schema.field(name)
        assert f.dtype == DataType(int(pm)) and f.dim == DIM and f.code_size == widths[name]
        assert f.arrow_type() == pa.binary(widths[name])
    described = {f.name: f.data_type for f in schema_to_proto(schema).fields}
    assert described["i8"] == schema_pb2.Int8Vector and described["b16"] == schema_pb2.BFloat16Vector


def test_numpy_rows_arrive_bit_exact_and_float_lists_are_rounded_to_the_field_type() -> None:
    schema = domain()
    data = rows(4)
    table = insert(schema, [{"id": i, **{n: data[n][i] for n in TYPES}} for i in range(4)])
    for name in TYPES:
        assert table.column(name).to_pylist() == [r.tobytes() for r in data[name]], name
    floats = np.array([[0.1, -2.5, 1e-3, 3.14159, 65504.0, -0.0]], dtype=np.float32)
    table = insert(schema, [{"id": 9, "f16": floats[0].tolist(), "b16": floats[0], "i8": data["i8"][0]}])
    assert table.column("f16").to_pylist() == [floats[0].astype(np.float16).tobytes()]
    assert table.column("b16").to_pylist() == [floats[0].astype(ml_dtypes.bfloat16).tobytes()]


def test_bad_rows_are_refused_with_the_field_named() -> None:
    schema = domain()
    good = {n: rows(1)[n][0] for n in TYPES}
    with pytest.raises(InvalidArgument, match=r"float16 vector field \(f16\) contains NaN or Inf"):
        insert(schema, [{"id": 1, **good, "f16": np.full(DIM, np.nan, np.float16)}])
    with pytest.raises(InvalidArgument, match=r"bfloat16 vector field \(b16\) contains NaN or Inf"):
        insert(schema, [{"id": 1, **good, "b16": [np.inf] * DIM}])
    # pymilvus sends the schema's dim for byte vectors: a short row shows in the length.
    with pytest.raises(InvalidArgument, match=r"the length \(5 bytes\) of int8 vector data of field \(i8\)"):
        insert(schema, [{"id": 1, **good, "i8": np.zeros(5, np.int8)}])
    ids = schema_pb2.FieldData(type=schema_pb2.Int64, field_name="id")
    ids.scalars.long_data.data.extend([1])
    fds = [ids]
    for name, (pm, _) in TYPES.items():
        fd = schema_pb2.FieldData(type=int(pm), field_name=name)
        fd.vectors.dim = DIM
        setattr(fd.vectors, f"{'float16' if name == 'f16' else 'bfloat16' if name == 'b16' else 'int8'}_vector",
                good[name].tobytes())
        fds.append(fd)
    fds[3].vectors.ClearField("int8_vector")
    fds[3].vectors.float_vector.data.extend([0.0] * DIM)
    with pytest.raises(InvalidArgument, match="expected int8_vector in the field data but got float_vector"):
        insert_to_table(fds, 1, schema)
    fds[3].vectors.int8_vector = b"\x01" * DIM
    fds[3].vectors.dim = 4
    with pytest.raises(InvalidArgument, match=r"the dim \(4\) of field data\(i8\) is not equal to schema dim \(6\)"):
        insert_to_table(fds, 1, schema)


def test_query_and_search_results_carry_the_bytes_pymilvus_decodes() -> None:
    schema = domain()
    data = rows(4, seed=2)
    table = insert(schema, [{"id": i, **{n: data[n][i] for n in TYPES}} for i in range(4)])
    out = build_query_results(table.slice(1, 2), schema, list(TYPES))
    by_name = {fd.field_name: fd for fd in out.fields_data}
    assert by_name["f16"].vectors.float16_vector == data["f16"][1:3].tobytes()
    assert by_name["b16"].vectors.bfloat16_vector == data["b16"][1:3].tobytes()
    assert by_name["i8"].vectors.int8_vector == data["i8"][1:3].tobytes() and by_name["i8"].vectors.dim == DIM
    hits = table.take([3, 0]).append_column("query", pa.array([0, 0], pa.int32()))
    hits = hits.append_column("distance", pa.array([2.0, 7.0], pa.float32()))
    result = SearchResult(build_search_results(hits, 1, 2, schema, list(TYPES)))
    for name in TYPES:
        got = [np.frombuffer(bytes(h["entity"][name]), np.uint8) for h in result[0]]
        want = [np.frombuffer(data[name][k].tobytes(), np.uint8) for k in (3, 0)]
        assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True)), name


def _search(schema: CollectionSchema, data: list[Any], field: str) -> np.ndarray:
    req = Prepare.search_requests_with_expr(collection_name="c", anns_field=field, param={"metric_type": "L2"},
                                            limit=5, data=data)
    spec = parse_search_request(req, schema)
    assert spec.vectors.dtype == np.float32 and spec.vectors.shape == (len(data), DIM)
    return spec.vectors


def test_each_placeholder_type_decodes_to_the_exact_float32_values() -> None:
    schema = domain()
    data = rows(3, seed=5)
    for name in TYPES:
        got = _search(schema, list(data[name]), name)
        np.testing.assert_array_equal(got, data[name].astype(np.float32))
    floats = np.random.default_rng(1).standard_normal((2, DIM)).astype(np.float32)
    np.testing.assert_array_equal(_search(schema, floats.tolist(), "f16"), floats.astype(np.float16).astype(np.float32))
    np.testing.assert_array_equal(
        _search(schema, floats.tolist(), "b16"), floats.astype(ml_dtypes.bfloat16).astype(np.float32)
    )
    with pytest.raises(InvalidArgument, match="search data type FloatVector does not match the type Int8Vector"):
        _search(schema, floats.tolist(), "i8")
    with pytest.raises(InvalidArgument, match="search data type Float16Vector does not match the type BFloat16Vector"):
        _search(schema, list(data["f16"]), "b16")
    with pytest.raises(InvalidArgument, match=r"the dim \(4\) of search data is not equal to schema dim \(6\)"):
        _search(schema, [np.zeros(4, np.int8)], "i8")


@pytest.mark.parametrize("index_type", ["FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "SCANN", "BIN_FLAT"])
def test_an_int8_field_takes_only_the_hnsw_family(index_type: str) -> None:
    schema = domain()
    with pytest.raises(InvalidArgument, match=f"data type Int8Vector can't build with this index {index_type}"):
        vector_index_params(schema.field("i8"), {"index_type": index_type, "metric_type": "L2"})
    for kind in ("HNSW", "HNSW_SQ", "AUTOINDEX"):
        assert vector_index_params(schema.field("i8"), {"index_type": kind})["metric_type"] == "COSINE"
    for kind in ("FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_RABITQ", "SCANN", "HNSW_PRQ"):
        vector_index_params(schema.field("f16"), {"index_type": kind, "metric_type": "IP", "params": '{"m": 3}'})
    with pytest.raises(InvalidArgument, match="float vector index does not support metric type: HAMMING"):
        vector_index_params(schema.field("b16"), {"index_type": "HNSW", "metric_type": "HAMMING"})
