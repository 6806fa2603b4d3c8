"""ARRAY fields through pymilvus: create, insert, upsert, every array operator in filters, flush and reload.

Each filter's result is checked against a plain-Python model of the rows, on
growing data first and again after flush + release + load (sealed segments
read back from Parquet). Bad inputs are refused with clear messages and leave
the data as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import numpy as np
import pytest
from google.protobuf.message import Message
from pymilvus import DataType, MilvusClient, MilvusException
from pymilvus.grpc_gen import common_pb2, milvus_pb2, schema_pb2

from tests.e2e.util import unique_name
from tests.harness import Standalone

N = 300
ARRAYS = ("ints", "small", "floats", "words", "flags")
Row = dict[str, Any]


def _schema() -> Any:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("ints", DataType.ARRAY, element_type=DataType.INT64, max_capacity=4)
    schema.add_field("small", DataType.ARRAY, element_type=DataType.INT16, max_capacity=3, nullable=True)
    schema.add_field("floats", DataType.ARRAY, element_type=DataType.DOUBLE, max_capacity=3, nullable=True)
    schema.add_field(
        "words", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=3, max_length=6, nullable=True
    )
    schema.add_field("flags", DataType.ARRAY, element_type=DataType.BOOL, max_capacity=2, nullable=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    return schema


def _rows(n: int, seed: int, first_id: int = 0) -> list[Row]:
    rng = np.random.default_rng(seed)

    def cells(capacity: int, draw: Callable[[], Any], nullable: bool = True) -> Any:
        if nullable and rng.random() < 0.2:
            return None
        return [draw() for _ in range(int(rng.integers(0, capacity + 1)))]

    words = ["a", "ab", "b", "ba", "abc", "c%"]
    return [
        {
            "id": first_id + i,
            "ints": cells(4, lambda: int(rng.integers(0, 5)), nullable=False),
            "small": cells(3, lambda: int(rng.integers(-3, 4))),
            "floats": cells(3, lambda: float(rng.choice([-1.5, 0.0, 0.25, 0.5, 2.0]))),
            "words": cells(3, lambda: str(rng.choice(words))),
            "flags": cells(2, lambda: bool(rng.random() < 0.5)),
            "v": rng.standard_normal(4).astype(np.float32).tolist(),
        }
        for i in range(n)
    ]


def _at(cells: list[Any] | None, index: int) -> Any:
    """``a[index]`` as the model sees it: None when the array is null or too short."""
    return cells[index] if cells is not None and index < len(cells) else None


def _has(cells: list[Any] | None) -> bool:
    return cells is not None


# Each filter with the Python predicate it must agree with. An element past the
# end or a null array makes a predicate false (Milvus: even for `!=`).
FILTERS: list[tuple[str, Callable[[Row], bool]]] = [
    ("ints[0] == 3", lambda r: _at(r["ints"], 0) == 3),
    ("ints[2] != 1", lambda r: _at(r["ints"], 2) not in (None, 1)),
    ("not (ints[2] == 1)", lambda r: _at(r["ints"], 2) != 1),
    ("1 <= small[1] < 3", lambda r: _at(r["small"], 1) is not None and 1 <= r["small"][1] < 3),
    (
        "small[0] * 2 + ints[0] > 4",
        lambda r: None not in (_at(r["small"], 0), _at(r["ints"], 0)) and r["small"][0] * 2 + r["ints"][0] > 4,
    ),
    ("floats[0] > 0.3", lambda r: _at(r["floats"], 0) is not None and r["floats"][0] > 0.3),
    ('words[0] like "a%"', lambda r: _at(r["words"], 0) is not None and r["words"][0].startswith("a")),
    ('words[1] like "c\\\\%"', lambda r: _at(r["words"], 1) == "c%"),
    ("flags[1]", lambda r: _at(r["flags"], 1) is True),
    ("ints[1] in [1, 2]", lambda r: _at(r["ints"], 1) in (1, 2)),
    ("array_contains(ints, 3)", lambda r: 3 in r["ints"]),
    ("ARRAY_CONTAINS_ALL(ints, [1, 2])", lambda r: {1, 2} <= set(r["ints"])),
    ('array_contains_any(words, ["ab", "c%"])', lambda r: _has(r["words"]) and bool({"ab", "c%"} & set(r["words"]))),
    ("array_contains(floats, 0.25)", lambda r: _has(r["floats"]) and 0.25 in r["floats"]),
    ("not array_contains(flags, true)", lambda r: _has(r["flags"]) and True not in r["flags"]),
    ("array_length(ints) == 2", lambda r: len(r["ints"]) == 2),
    ("array_length(small) >= 2", lambda r: _has(r["small"]) and len(r["small"]) >= 2),
    ("ints == [1, 2]", lambda r: r["ints"] == [1, 2]),
    ("ints == []", lambda r: r["ints"] == []),
    ('words != ["a"]', lambda r: _has(r["words"]) and r["words"] != ["a"]),
    ("floats is null", lambda r: r["floats"] is None),
    ("flags is not null and array_length(flags) == 0", lambda r: r["flags"] == []),
]


def _ids(rows: list[Row], predicate: Callable[[Row], bool]) -> list[int]:
    return sorted(r["id"] for r in rows if predicate(r))


def _query(milvus: MilvusClient, name: str, flt: str, **kwargs: Any) -> list[Row]:
    got = milvus.query(
        name, filter=flt, output_fields=["id", *ARRAYS], limit=16384, consistency_level="Strong", **kwargs
    )
    return sorted(got, key=lambda r: r["id"])


def _check_everything(milvus: MilvusClient, name: str, model: dict[int, Row]) -> None:
    rows = list(model.values())
    everything = _query(milvus, name, "id >= 0")
    assert [r["id"] for r in everything] == sorted(model)
    for got in everything:
        assert {a: got[a] for a in ARRAYS} == {a: model[got["id"]][a] for a in ARRAYS}, got["id"]
    for flt, predicate in FILTERS:
        want = _ids(rows, predicate)
        assert want, f"{flt} matches no row; the data does not exercise it"
        assert [r["id"] for r in _query(milvus, name, flt)] == want, flt
    templated = _query(milvus, name, "array_contains_any(ints, {wanted})", filter_params={"wanted": [0, 4]})
    assert [r["id"] for r in templated] == _ids(rows, lambda r: bool({0, 4} & set(r["ints"])))


@pytest.fixture()
def collection(milvus: MilvusClient) -> Iterator[str]:
    name = unique_name("arrays")
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2")
    milvus.create_collection(name, schema=_schema(), index_params=index, num_shards=2)
    yield name
    milvus.drop_collection(name)


def test_describe_shows_element_type_and_capacity(milvus: MilvusClient, collection: str) -> None:
    fields = {f["name"]: f for f in milvus.describe_collection(collection)["fields"]}
    assert fields["ints"]["type"] == DataType.ARRAY and fields["ints"]["element_type"] == DataType.INT64
    assert fields["ints"]["params"]["max_capacity"] == 4
    assert fields["words"]["element_type"] == DataType.VARCHAR
    assert fields["words"]["params"] == {"max_capacity": 3, "max_length": 6}
    assert fields["small"]["nullable"] is True and not fields["ints"].get("nullable", False)


def test_insert_query_filter_flush_reload(milvus: MilvusClient, collection: str) -> None:
    rows = _rows(N, seed=7)
    milvus.insert(collection, rows[: N // 2])
    milvus.insert(collection, rows[N // 2 :])
    model = {r["id"]: r for r in rows}
    _check_everything(milvus, collection, model)

    # Upsert replaces arrays (to null, to empty, to longer) and inserts new rows.
    changed = [
        {**rows[0], "ints": [4, 4, 4, 4], "words": None},
        {**rows[1], "ints": [], "small": [], "flags": [True, True]},
        *_rows(5, seed=8, first_id=N),
    ]
    milvus.upsert(collection, changed)
    model.update({r["id"]: r for r in changed})
    _check_everything(milvus, collection, model)

    # Sealed: the rows come back from Parquet segments loaded on the worker.
    milvus.flush(collection)
    milvus.release_collection(collection)
    milvus.load_collection(collection)
    _check_everything(milvus, collection, model)

    # Search with an array filter returns arrays in the hits.
    query = np.asarray(model[3]["v"], dtype=np.float32)
    hits = milvus.search(
        collection,
        data=[query.tolist()],
        filter="array_length(ints) >= 1",
        limit=5,
        output_fields=["ints", "words"],
        consistency_level="Strong",
    )[0]
    assert hits and all(len(h["entity"]["ints"]) >= 1 for h in hits)
    for h in hits:
        assert h["entity"]["ints"] == model[h["id"]]["ints"] and h["entity"]["words"] == model[h["id"]]["words"]

    # Delete by an array filter.
    milvus.delete(collection, filter="array_contains(ints, 4)")
    for key in [k for k, r in model.items() if 4 in r["ints"]]:
        del model[key]
    _check_everything(milvus, collection, model)


def _raw_call(standalone: Standalone, method: str, request: Message, response: type[Message]) -> Any:
    """``MilvusService/<method>`` over a plain gRPC channel, bypassing pymilvus' own checks."""
    with grpc.insecure_channel(standalone.uri.removeprefix("http://")) as channel:
        call = channel.unary_unary(
            f"/milvus.proto.milvus.MilvusService/{method}",
            request_serializer=type(request).SerializeToString,
            response_deserializer=response.FromString,
        )
        return call(request, timeout=30)


def _count(milvus: MilvusClient, name: str) -> int:
    return int(milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"])


def test_bad_inserts_are_refused_and_write_nothing(
    milvus: MilvusClient, standalone: Standalone, collection: str
) -> None:
    good = _rows(10, seed=9)
    milvus.insert(collection, good)
    assert _count(milvus, collection) == 10

    def bad(**changes: Any) -> list[Row]:
        # Two good rows and one bad one: the whole insert must be refused.
        return [*_rows(2, seed=10, first_id=100), {**_rows(1, seed=11, first_id=200)[0], **changes}]

    with pytest.raises(MilvusException, match=r"the length \(5\) of the array at row 2 of field \(ints\) exceeds "
                                              r"max capacity \(4\)"):  # fmt: skip
        milvus.insert(collection, bad(ints=[1, 2, 3, 4, 5]))
    with pytest.raises(MilvusException, match=r"length of VarChar element of array field words exceeds max length, "
                                              r"row number: 2, array index: 1, length: 7, max length: 6"):  # fmt: skip
        milvus.insert(collection, bad(words=["ok", "toolong"]))
    with pytest.raises(MilvusException, match=r"the value 40000 of field \(small\) is out of range of Int16"):
        milvus.insert(collection, bad(small=[1, 40000]))
    with pytest.raises(MilvusException, match=r"exceeds max capacity \(2\)"):
        milvus.upsert(collection, [{**good[0], "flags": [True, True, False]}])

    # pymilvus checks element types itself; a raw request reaches the server's own check.
    request = milvus_pb2.InsertRequest(collection_name=collection, num_rows=1)
    request.fields_data.add(field_name="id", type=schema_pb2.Int64).scalars.long_data.data.append(500)
    ints = request.fields_data.add(field_name="ints", type=schema_pb2.Array)
    ints.scalars.array_data.data.add().string_data.data.extend(["3"])
    vector = request.fields_data.add(field_name="v", type=schema_pb2.FloatVector)
    vector.vectors.dim = 4
    vector.vectors.float_vector.data.extend([0.0] * 4)
    answer = _raw_call(standalone, "Insert", request, milvus_pb2.MutationResult)
    assert answer.status.code != 0
    assert (
        "type mismatch for array field (ints): element type is Int64, expected long_data in array 0 but got "
        "string_data" in answer.status.reason
    )

    assert _count(milvus, collection) == 10
    stored = _query(milvus, collection, "id >= 0")
    assert [{a: r[a] for a in ("id", *ARRAYS)} for r in stored] == [{a: r[a] for a in ("id", *ARRAYS)} for r in good]


def test_bad_filters_and_schemas_are_refused(milvus: MilvusClient, standalone: Standalone, collection: str) -> None:
    milvus.insert(collection, _rows(3, seed=12))
    for flt, message in [
        ("ints > 1", "cannot compare ARRAY<INT64> field 'ints' with number 1"),
        ('ints[0] == "a"', "cannot compare INT64 element 'ints[0]' with string \"a\""),
        ('array_contains(ints, "a")', "cannot compare the INT64 elements of ARRAY<INT64> field 'ints'"),
        ("ints in [1, 2]", "'in' cannot be applied to ARRAY<INT64> field 'ints'"),
    ]:
        with pytest.raises(MilvusException, match=re.escape(message)):
            milvus.query(collection, filter=flt, consistency_level="Strong")

    with pytest.raises(MilvusException, match="anns field `ints` is not a vector field"):
        milvus.search(collection, data=[[0.0] * 4], anns_field="ints", limit=1)

    # pymilvus refuses an ARRAY primary key itself; the server refuses it too.
    pk_name = unique_name("array_pk")
    array_pk = schema_pb2.CollectionSchema(
        name=pk_name,
        fields=[
            schema_pb2.FieldSchema(
                name="id",
                data_type=schema_pb2.Array,
                element_type=schema_pb2.Int64,
                is_primary_key=True,
                type_params=[common_pb2.KeyValuePair(key="max_capacity", value="2")],
            ),
            schema_pb2.FieldSchema(
                name="v", data_type=schema_pb2.FloatVector, type_params=[common_pb2.KeyValuePair(key="dim", value="4")]
            ),
        ],
    )
    request = milvus_pb2.CreateCollectionRequest(collection_name=pk_name, schema=array_pk.SerializeToString())
    status = _raw_call(standalone, "CreateCollection", request, common_pb2.Status)
    assert "the data type of primary key should be Int64 or VarChar, but field `id` is Array" in status.reason
    assert not milvus.has_collection(pk_name)

    too_big = MilvusClient.create_schema(auto_id=False)
    too_big.add_field("id", DataType.INT64, is_primary=True)
    too_big.add_field("a", DataType.ARRAY, element_type=DataType.INT64, max_capacity=4097)
    too_big.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    with pytest.raises(MilvusException, match=r"the maximum capacity specified for a Array should be in \(0, 4096\]"):
        milvus.create_collection(unique_name("arrays"), schema=too_big)

    nested = MilvusClient.create_schema(auto_id=False)
    nested.add_field("id", DataType.INT64, is_primary=True)
    nested.add_field("a", DataType.ARRAY, element_type=DataType.JSON, max_capacity=4)
    nested.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    with pytest.raises(MilvusException, match="element type JSON is not supported for array field `a`"):
        milvus.create_collection(unique_name("arrays"), schema=nested)
