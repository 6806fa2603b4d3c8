"""Grouping and range search parameters as pymilvus sends them, and group values back."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pymilvus import DataType as PmType
from pymilvus import MilvusClient
from pymilvus.client.prepare import Prepare
from pymilvus.client.search_result import SearchResult
from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.schema import CollectionSchema
from proxy.convert import build_search_results, parse_search_request, schema_from_proto
from proxy.convert.groups import group_by_values
from proxy.convert.search import GROUP_SIZE_LIMIT
from proxy.convert.search_checks import check_range
from segcore.segments.reduce import merge_topk

SCALARS = {
    "b": PmType.BOOL,
    "i8": PmType.INT8,
    "i16": PmType.INT16,
    "i32": PmType.INT32,
    "i64": PmType.INT64,
    "f": PmType.FLOAT,
    "d": PmType.DOUBLE,
    "j": PmType.JSON,
}


def rich_schema() -> CollectionSchema:
    s = MilvusClient.create_schema(enable_dynamic_field=True)
    s.add_field("pk", PmType.INT64, is_primary=True)
    s.add_field("title", PmType.VARCHAR, max_length=8, nullable=True)
    for name, dtype in SCALARS.items():
        s.add_field(name, dtype)
    s.add_field("vec", PmType.FLOAT_VECTOR, dim=2)
    pb = Prepare.get_schema_from_collection_schema("c", s)
    return schema_from_proto(pb, collection_name="c")


def request(**kwargs: Any) -> Any:
    """The SearchRequest pymilvus' ``search`` sends (MilvusClient defaults)."""
    args: dict[str, Any] = {
        "collection_name": "c",
        "anns_field": "vec",
        "param": {},
        "limit": 3,
        "data": [[0.5, 0.25]],
    }
    args.update(kwargs)
    return Prepare.search_requests_with_expr(**args)


def parse(**kwargs: Any) -> Any:
    return parse_search_request(request(**kwargs), rich_schema())


# ---------------------------------------------------------------- group by


def test_group_by_from_search_kwargs() -> None:
    spec = parse(
        param={"metric_type": "IP", "params": {"ef": 32}},
        group_by_field="title",
        group_size=3,
        strict_group_size=True,
        offset=2,
    )
    assert (spec.group_by_field, spec.group_size, spec.strict_group_size) == ("title", 3, True)
    assert (spec.topk, spec.offset) == (3, 2)
    assert spec.params == {"ef": 32}


def test_group_by_inside_search_params() -> None:
    # pymilvus copies keys of the search_params dict into the ``params`` JSON.
    spec = parse(param={"metric_type": "L2", "group_by_field": "i32", "group_size": 2})
    assert (spec.group_by_field, spec.group_size, spec.strict_group_size) == ("i32", 2, False)
    assert "group_by_field" not in spec.params and "group_size" not in spec.params


def test_defaults_without_group_by() -> None:
    spec = parse()
    assert (spec.group_by_field, spec.group_size, spec.strict_group_size) == (None, 1, False)
    # Grouping settings without a field to group by are checked, then ignored.
    spec = parse(group_size=4, strict_group_size=True)
    assert (spec.group_by_field, spec.group_size, spec.strict_group_size) == (None, 1, False)


@pytest.mark.parametrize("name", ["b", "i8", "i16", "i32", "i64", "title", "pk"])
def test_group_by_accepts_integer_string_and_bool_fields(name: str) -> None:
    assert parse(group_by_field=name).group_by_field == name


@pytest.mark.parametrize("size", [1, GROUP_SIZE_LIMIT])
def test_group_size_bounds(size: int) -> None:
    assert parse(group_by_field="title", group_size=size).group_size == size


BAD_GROUPING: list[tuple[str, dict[str, Any], str]] = [
    ("unknown field", {"group_by_field": "nope"}, "group_by_field `nope` does not exist in collection c"),
    ("vector", {"group_by_field": "vec"}, "group_by_field `vec` of type FloatVector is not supported"),
    ("float", {"group_by_field": "f"}, "group_by_field `f` of type Float is not supported"),
    ("double", {"group_by_field": "d"}, "of type Double is not supported"),
    ("json", {"group_by_field": "j"}, "group_by_field `j` of type JSON is not supported"),
    ("dynamic", {"group_by_field": "$meta"}, r"group_by_field `\$meta` of type JSON"),
    ("group size 0", {"group_by_field": "i8", "group_size": 0}, r"group_size \[0\] is invalid"),
    (
        "group size too big",
        {"group_by_field": "i8", "group_size": GROUP_SIZE_LIMIT + 1},
        rf"group_size \[{GROUP_SIZE_LIMIT + 1}\] is invalid, it should be in range \[1, {GROUP_SIZE_LIMIT}\]",
    ),
    ("group size text", {"group_by_field": "i8", "group_size": "x"}, r"group_size \[x\] is invalid"),
    (
        "strict not a bool",
        {"group_by_field": "i8", "strict_group_size": "maybe"},
        r"strict_group_size \[maybe\] is invalid, it should be true or false",
    ),
]


@pytest.mark.parametrize(
    ("overrides", "message"), [c[1:] for c in BAD_GROUPING], ids=[c[0] for c in BAD_GROUPING]
)
def test_bad_grouping(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse(**overrides)


# ------------------------------------------------------------ range search


@pytest.mark.parametrize(
    ("metric", "radius", "range_filter"),
    [("L2", 2.0, 0.5), ("IP", 0.5, 2.0), ("COSINE", -0.5, 0.9), ("L2", 1.0, None), (None, 1, 3)],
)
def test_range_parameters(metric: str | None, radius: float, range_filter: float | None) -> None:
    params: dict[str, Any] = {"radius": radius}
    if range_filter is not None:
        params["range_filter"] = range_filter
    param: dict[str, Any] = {"params": params}
    if metric:
        param["metric_type"] = metric
    spec = parse(param=param)
    assert (spec.radius, spec.range_filter) == (radius, range_filter)
    assert spec.params["radius"] == radius  # still passed to the index


BAD_RANGES: list[tuple[str, dict[str, Any], str]] = [
    (
        "L2 inverted",
        {"metric_type": "L2", "params": {"radius": 1.0, "range_filter": 1.0}},
        r"range_filter \[1.0\] must be less than radius \[1.0\] for metric L2",
    ),
    (
        "IP inverted",
        {"metric_type": "IP", "params": {"radius": 0.8, "range_filter": 0.2}},
        r"range_filter \[0.2\] must be greater than radius \[0.8\] for metric IP",
    ),
    (
        "COSINE equal",
        {"metric_type": "cosine", "params": {"radius": 0.5, "range_filter": 0.5}},
        "must be greater than radius .* for metric COSINE",
    ),
    (
        "range_filter alone",
        {"params": {"range_filter": 0.5}},
        "range_filter is only valid together with radius",
    ),
    ("radius text", {"params": {"radius": "far"}}, r"radius \[far\] is invalid, it should be a number"),
    ("radius bool", {"params": {"radius": True}}, r"radius \[True\] is invalid"),
    (
        "range_filter text",
        {"params": {"radius": 1, "range_filter": "near"}},
        r"range_filter \[near\] is invalid",
    ),
]


@pytest.mark.parametrize(
    ("param", "message"), [c[1:] for c in BAD_RANGES], ids=[c[0] for c in BAD_RANGES]
)
def test_bad_ranges(param: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse(param=param)


def test_nan_radius() -> None:
    # pymilvus sends NaN as null; a raw client can still send the JSON NaN.
    req = request()
    (params,) = [p for p in req.search_params if p.key == "params"]
    params.value = '{"radius": NaN}'
    with pytest.raises(InvalidArgument, match=r"radius \[nan\] is invalid"):
        parse_search_request(req, rich_schema())


def test_check_range_once_the_index_metric_is_known() -> None:
    check_range(None, 1.0, 2.0)  # metric unknown yet: only the pairing is checked
    check_range("ip", 1.0, 2.0)
    with pytest.raises(InvalidArgument, match="must be less than radius"):
        check_range("L2", 1.0, 2.0)
    with pytest.raises(InvalidArgument, match="only valid together with radius"):
        check_range("L2", None, 2.0)


# ------------------------------------------------------------------- ef


def test_ef_passes_through_as_an_integer() -> None:
    assert parse(param={"params": {"ef": 64}}).params == {"ef": 64}
    spec = parse(param={"params": {"ef": 64.0, "nprobe": 8}})
    assert spec.params == {"ef": 64, "nprobe": 8} and isinstance(spec.params["ef"], int)


@pytest.mark.parametrize("ef", [0, -1, 1.5, "many", True, 2**31])
def test_bad_ef(ef: Any) -> None:
    with pytest.raises(InvalidArgument, match=r"param 'ef' \(.*\) should be an integer in range"):
        parse(param={"params": {"ef": ef}})


# ---------------------------------------------------------- group values


def test_group_values_follow_the_reduced_hits() -> None:
    schema = rich_schema()
    shard_a = pa.table(
        {
            "query": pa.array([0, 0, 0, 1], pa.int32()),
            "pk": pa.array([1, 2, 3, 4], pa.int64()),
            "distance": pa.array([0.9, 0.8, 0.7, 0.5], pa.float32()),
            "title": pa.array(["x", None, "x", "y"]),
        }
    )
    shard_b = pa.table(
        {
            "query": pa.array([0, 1], pa.int32()),
            "pk": pa.array([5, 6], pa.int64()),
            "distance": pa.array([0.85, 0.6], pa.float32()),
            "title": pa.array([None, "y"]),
        }
    )
    hits = merge_topk(
        [shard_a, shard_b], topk=2, metric="IP", pk_field="pk", group_by="title", group_size=2
    )
    data = build_search_results(hits, 2, 2, schema, ["title"])
    data.group_by_field_value.CopyFrom(group_by_values(hits, schema, "title"))

    values = data.group_by_field_value
    assert values.field_name == "title" and values.type == schema_pb2.VarChar
    assert list(values.scalars.string_data.data) == ["x", "x", "", "", "y", "y"]
    assert list(values.valid_data) == [True, True, False, False, True, True]
    assert list(data.ids.int_id.data) == [1, 3, 5, 2, 6, 4]

    result = SearchResult(data)  # pymilvus reads the group field from fields_data
    assert [[h["entity"]["title"] for h in q] for q in result] == [
        ["x", "x", None, None],
        ["y", "y"],
    ]


def test_group_values_of_an_empty_or_unsearched_result() -> None:
    schema = rich_schema()
    empty = group_by_values(None, schema, "i16")
    assert empty.field_name == "i16" and empty.type == schema_pb2.Int16
    assert list(empty.scalars.int_data.data) == []
    bools = group_by_values(pa.table({"b": pa.array([True, False])}), schema, "b")
    assert list(bools.scalars.bool_data.data) == [True, False]
    with pytest.raises(ValueError, match="lack the group by column b"):
        group_by_values(pa.table({"pk": pa.array([1])}), schema, "b")
