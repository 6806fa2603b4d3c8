"""SearchRequest -> SearchSpec and SearchResultData, as pymilvus builds and reads them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.prepare import Prepare
from pymilvus.client.search_result import SearchResult
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema
from proxy.convert import (
    build_count_result,
    build_count_results,
    build_query_results,
    build_search_results,
    is_count_query,
    parse_search_request,
    schema_from_proto,
    template_values,
    template_values_to_python,
)


def make_schema(*, pk_type: Any = PmType.INT64, second_vector: bool = False) -> Any:
    s = MilvusClient.create_schema(enable_dynamic_field=True)
    if pk_type == PmType.VARCHAR:
        s.add_field("pk", PmType.VARCHAR, is_primary=True, max_length=8)
    else:
        s.add_field("pk", PmType.INT64, is_primary=True)
    s.add_field("title", PmType.VARCHAR, max_length=8, nullable=True)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=4)
    if second_vector:
        s.add_field("vec2", PmType.FLOAT_VECTOR, dim=2)
    return s


def domain(orm: Any) -> CollectionSchema:
    pb = Prepare.get_schema_from_collection_schema("c", orm)
    return schema_from_proto(pb, collection_name="c")


def request(**kwargs: Any) -> milvus_pb2.SearchRequest:
    """The SearchRequest pymilvus' ``search`` sends (MilvusClient defaults)."""
    args: dict[str, Any] = {
        "collection_name": "c",
        "anns_field": "",
        "param": {},
        "limit": 10,
        "data": [[0.1, 0.2, 0.3, 0.4]],
    }
    args.update(kwargs)
    return Prepare.search_requests_with_expr(**args)


# ----------------------------------------------------------------- parsing


def test_parse_a_full_request() -> None:
    schema = domain(make_schema())
    req = request(
        anns_field="vec",
        param={"metric_type": "l2", "params": {"ef": 64, "radius": 2, "range_filter": 0.5}},
        limit=5,
        offset=3,
        data=np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32),
        expr="pk > {low} and title in {names}",
        expr_params={"low": 3, "names": ["a", "b"], "f": 0.5, "ok": True, "m": [[1, 2], [3]]},
        output_fields=["title", "color"],
        partition_names=["p1"],
        round_decimal=3,
        guarantee_timestamp=77,
        consistency_level=common_pb2.Bounded,
        use_default_consistency=False,
    )
    spec = parse_search_request(req, schema)
    assert spec.vectors.dtype == np.float32 and spec.vectors.shape == (2, 4)
    assert spec.vectors.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    assert (spec.nq, spec.topk, spec.limit, spec.offset) == (2, 5, 5, 3)
    assert spec.anns_field == "vec" and spec.metric_type == "L2"
    assert spec.params == {"ef": 64, "radius": 2, "range_filter": 0.5}
    assert (spec.radius, spec.range_filter) == (2.0, 0.5)
    assert spec.round_decimal == 3 and not spec.ignore_growing
    assert spec.filter == "pk > {low} and title in {names}"
    assert spec.filter_params == {
        "low": 3, "names": ["a", "b"], "f": 0.5, "ok": True, "m": [[1, 2], [3]],
    }  # fmt: skip
    assert spec.output_fields == ("title", "color")
    assert spec.partition_names == ("p1",)
    assert spec.guarantee_timestamp == 77
    assert spec.consistency_level == common_pb2.Bounded and not spec.use_default_consistency


def test_parse_defaults() -> None:
    schema = domain(make_schema())
    spec = parse_search_request(request(), schema)
    assert spec.anns_field == "vec"  # the only vector field
    assert spec.metric_type is None and spec.offset == 0 and spec.round_decimal == -1
    assert spec.params == {} and spec.filter == "" and spec.filter_params == {}
    assert spec.radius is None and spec.range_filter is None
    assert spec.vectors.tolist() == [np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32).tolist()]


def test_template_values_of_every_kind() -> None:
    values = Prepare.prepare_expression_template(
        {"i": 1, "s": "x", "b": False, "f": 1.5, "li": [1, 2], "lf": [0.5], "lb": [True],
         "ls": ["a"], "mixed": [1, {"k": 2}], "empty": []}
    )  # fmt: skip
    assert template_values_to_python(values) == {
        "i": 1, "s": "x", "b": False, "f": 1.5, "li": [1, 2], "lf": [0.5], "lb": [True],
        "ls": ["a"], "mixed": [1, {"k": 2}], "empty": [],
    }  # fmt: skip
    with pytest.raises(InvalidArgument, match="template value is empty"):
        template_values_to_python({"x": schema_pb2.TemplateValue()})


def _bad_placeholder(kind: int, values: list[bytes]) -> bytes:
    holder = common_pb2.PlaceholderValue(tag="$0", type=kind, values=values)  # type: ignore[arg-type]
    return common_pb2.PlaceholderGroup(placeholders=[holder]).SerializeToString()


BAD_REQUESTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "dim mismatch",
        {"data": [[0.1, 0.2]]},
        r"the dim \(2\) of search data is not equal to schema dim \(4\) of anns field \(vec\)",
    ),
    (
        "binary vectors",
        {"data": [b"\x01\x02"], "anns_field": "vec"},
        r"search data type BinaryVector does not match the type FloatVector of anns field \(vec\)",
    ),
    (
        "float16 vectors",
        {"data": [np.zeros(4, dtype=np.float16)]},
        "search data type Float16Vector does not match",
    ),
    ("topk 0", {"limit": 0}, r"topk \[0\] is invalid, it should be in range \[1, 16384\]"),
    ("topk too big", {"limit": 16385}, r"topk \[16385\] is invalid"),
    (
        "offset too big",
        {"limit": 16000, "offset": 1000},
        r"offset\+topk \[17000\] is invalid, it should be in range \[1, 16384\], but got 17000",
    ),
    ("round_decimal", {"round_decimal": 7}, "round_decimal 7 is invalid"),
    ("unknown anns", {"anns_field": "nope"}, "anns field `nope` does not exist in collection c"),
    ("scalar anns", {"anns_field": "title"}, "anns field `title` is not a vector field"),
    (
        "order by",
        {"order_by_fields": [{"field": "title", "order": "asc"}]},
        "order_by_fields is not supported yet",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "message"), [c[1:] for c in BAD_REQUESTS], ids=[c[0] for c in BAD_REQUESTS]
)
def test_bad_requests(overrides: dict[str, Any], message: str) -> None:
    schema = domain(make_schema())
    with pytest.raises(InvalidArgument, match=message):
        parse_search_request(request(**overrides), schema)


def test_bad_raw_requests() -> None:
    schema = domain(make_schema())
    req = request()
    req.ClearField("placeholder_group")
    with pytest.raises(InvalidArgument, match="carries no vectors"):
        parse_search_request(req, schema)
    req.placeholder_group = b"\xff\xff"
    with pytest.raises(InvalidArgument, match="cannot be decoded"):
        parse_search_request(req, schema)
    req.placeholder_group = _bad_placeholder(common_pb2.PlaceholderType.FloatVector, [])
    with pytest.raises(InvalidArgument, match=r"nq \[0\] is invalid"):
        parse_search_request(req, schema)

    req = request()
    del req.search_params[:]
    with pytest.raises(InvalidArgument, match="topk not found in search_params"):
        parse_search_request(req, schema)
    req = request()
    req.nq = 3
    with pytest.raises(InvalidArgument, match=r"nq \(3\) of the request does not match"):
        parse_search_request(req, schema)
    req = request()
    req.search_params.append(common_pb2.KeyValuePair(key="params", value="[1]"))
    with pytest.raises(InvalidArgument, match="search params must be a JSON object"):
        parse_search_request(req, schema)
    req = request()
    req.search_params.append(common_pb2.KeyValuePair(key="params", value="[" * 100_000 + "]" * 100_000))
    with pytest.raises(InvalidArgument, match="search params is not valid JSON: JSON value is nested more than 256"):
        parse_search_request(req, schema)


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "{nope"])
def test_template_json_values_that_do_not_decode_are_refused(text: str) -> None:
    value = schema_pb2.TemplateValue(
        array_val=schema_pb2.TemplateArrayValue(json_data=schema_pb2.JSONArray(data=[text.encode()]))
    )
    with pytest.raises(InvalidArgument, match="a filter template value is not valid JSON"):
        template_values_to_python({"x": value})


def test_anns_field_must_be_named_with_two_vector_fields() -> None:
    schema = domain(make_schema(second_vector=True))
    with pytest.raises(InvalidArgument, match="multiple anns_fields exist"):
        parse_search_request(request(), schema)
    spec = parse_search_request(request(anns_field="vec2", data=[[1.0, 2.0]]), schema)
    assert spec.anns_field == "vec2" and spec.vectors.shape == (1, 2)


# ----------------------------------------------------------------- results


def hits_table(schema: CollectionSchema, pk_values: list[Any], **extra: Any) -> pa.Table:
    columns: dict[str, Any] = {
        "query": pa.array([0, 0, 2], pa.int32()),
        "pk": pa.array(pk_values, schema.primary_field.arrow_type()),
        "distance": pa.array([0.123456, 0.5, 1.25], pa.float32()),
    }
    columns.update(extra)
    return pa.table(columns)


def test_search_results_read_by_pymilvus() -> None:
    schema = domain(make_schema())
    table = hits_table(
        schema,
        [7, 3, 9],
        title=pa.array(["a", None, "c"]),
        **{"$meta": pa.array(['{"color":"red","n":1}', "{}", '{"n":2}'])},
    )
    data = build_search_results(table, 3, 2, schema, ["title", "color"], round_decimal=2)
    assert (data.num_queries, data.top_k, list(data.topks)) == (3, 2, [2, 0, 1])
    assert data.primary_field_name == "pk"
    assert list(data.output_fields) == ["title", "color"]

    result = SearchResult(data)
    assert [len(hits) for hits in result] == [2, 0, 1]
    assert result[0].ids == [7, 3] and result[2].ids == [9]
    assert result[0].distances == pytest.approx([0.12, 0.5])
    assert [dict(h) for h in result[0]] == [
        {"pk": 7, "distance": pytest.approx(0.12), "entity": {"title": "a", "color": "red"}},
        {"pk": 3, "distance": 0.5, "entity": {"title": None}},
    ]
    assert result[2][0]["entity"] == {"title": "c"}


def test_search_results_with_string_keys_star_and_no_hits() -> None:
    schema = domain(make_schema(pk_type=PmType.VARCHAR))
    vec = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12), pa.float32()), 4)
    table = hits_table(
        schema,
        ["x", "y", "z"],
        title=pa.array(["a", "b", None]),
        vec=vec,
        **{"$meta": pa.array(['{"k":1}', "{}", "{}"])},
    )
    data = build_search_results(table, 3, 10, schema, ["*"])
    result = SearchResult(data)
    assert result[0].ids == ["x", "y"]
    first = result[0][0]
    assert first["pk"] == "x"
    assert first["entity"] == {"pk": "x", "title": "a", "vec": [0, 1, 2, 3], "k": 1}
    assert result[2][0]["entity"]["vec"] == [8, 9, 10, 11]

    empty = build_search_results(None, 2, 10, schema, ["title", "color"])
    assert list(empty.topks) == [0, 0] and empty.ids.WhichOneof("id_field") == "str_id"
    assert [len(hits) for hits in SearchResult(empty)] == [0, 0]


def test_search_results_reject_bad_tables() -> None:
    schema = domain(make_schema())
    table = hits_table(schema, [1, 2, 3])
    with pytest.raises(ValueError, match="outside 0..1"):
        build_search_results(table, 2, 10, schema, [])
    unsorted = table.take([2, 0, 1])
    with pytest.raises(ValueError, match="sorted by query"):
        build_search_results(unsorted, 3, 10, schema, [])


def test_search_through_pymilvus(connect: Any) -> None:
    handler, _ = connect(make_schema())
    rows = [
        {"pk": i, "title": f"t{i}", "vec": [float(i)] * 4, **({"color": "red"} if i % 2 else {})}
        for i in range(6)
    ]
    handler.insert_rows("c", rows)
    result = handler.search(
        "c",
        "vec",
        {"metric_type": "L2", "params": {"ef": 16}},
        limit=2,
        data=[[0.0] * 4, [4.9] * 4],
        output_fields=["title", "color"],
    )
    assert [hits.ids for hits in result] == [[0, 1], [5, 4]]
    assert [h["entity"] for h in result[1]] == [
        {"title": "t5", "color": "red"},
        {"title": "t4"},
    ]
    assert result[0].distances == pytest.approx([0.0, 4.0])

    result = handler.search("c", "vec", {}, limit=1, data=[[3.0] * 4], output_fields=["*"])
    assert dict(result[0][0]) == {
        "pk": 3,
        "distance": 0.0,
        "entity": {"pk": 3, "title": "t3", "vec": [3.0] * 4, "color": "red"},
    }


# ------------------------------------------------------------------- query


def test_count_queries() -> None:
    assert is_count_query([" COUNT(*) "]) and not is_count_query(["pk", "*"])
    with pytest.raises(InvalidArgument, match="cannot be combined"):
        is_count_query(["count(*)", "pk"])
    out = build_count_results(5, collection_name="c")
    assert list(out.output_fields) == ["count(*)"]
    (column,) = out.fields_data
    assert column.type == schema_pb2.Int64 and list(column.scalars.long_data.data) == [5]
    assert build_count_result(5, collection_name="c") == out
    assert template_values({}) == {}


def test_query_results_pieces() -> None:
    schema = domain(make_schema())
    table = pa.table({"pk": pa.array([1], pa.int64()), "$meta": pa.array(['{"a":1,"b":2}'])})
    out = build_query_results(table, schema, ["a"])
    assert out.primary_field_name == "pk" and out.collection_name == "c"
    assert list(out.output_fields) == ["pk", "a"]
    assert [fd.field_name for fd in out.fields_data] == ["pk", "$meta"]
    assert list(out.fields_data[1].scalars.json_data.data) == [b'{"a":1}']
    aliased = build_query_results(table, schema, ["a"], collection_name="alias")
    assert aliased.collection_name == "alias"


def test_query_results_carry_a_success_status_on_the_wire() -> None:
    # An unset status reaches the Node.js SDK as `status: null`, which it reads as a failure.
    schema = domain(make_schema())
    table = pa.table({"pk": pa.array([1], pa.int64())})
    for out in (build_query_results(table, schema, ["pk"]), build_count_results(1, collection_name="c")):
        assert out.HasField("status")
        assert (out.status.error_code, out.status.code) == (common_pb2.Success, 0)
        assert milvus_pb2.QueryResults.FromString(out.SerializeToString()).HasField("status")
