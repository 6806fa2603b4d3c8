"""Bad input gets the Milvus error a user of Milvus expects, and changes nothing.

Each case is one pymilvus call against the session's standalone; it must raise
with the expected code and message, and afterwards the collection holds
exactly the rows it held before.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.util import unique_name

OK_ROW = {"id": 1, "s": "a", "n": 1, "v": [0.0, 0.0, 0.0, 1.0]}


@pytest.fixture(scope="module")
def coll(standalone: object) -> str:
    from tests.harness import Standalone

    assert isinstance(standalone, Standalone)
    client = MilvusClient(standalone.uri)
    name = unique_name("err")
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("s", DataType.VARCHAR, max_length=5)
    schema.add_field("n", DataType.INT32)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = client.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    client.create_collection(name, schema=schema, index_params=params)
    client.insert(name, [OK_ROW, {**OK_ROW, "id": 2}])
    client.close()
    return name


def _rows(milvus: MilvusClient, name: str) -> list[dict[str, object]]:
    return sorted(
        milvus.query(name, filter="id >= 0", output_fields=["*"], consistency_level="Strong"), key=lambda r: r["id"]
    )


CASES: list[tuple[str, Callable[[MilvusClient, str], object], int, str]] = [
    (
        "collection not found",
        lambda m, c: m.query(unique_name("missing"), filter="id > 0"),
        100,
        r"collection not found\[database=default\]\[collection=",
    ),
    (
        "dimension mismatch",
        lambda m, c: m.insert(c, [{**OK_ROW, "id": 9, "v": [0.0, 1.0, 2.0]}]),
        1100,
        r"the dim \(3\) of field data\(v\) is not equal to schema dim \(4\)",
    ),
    ("string too long", lambda m, c: m.insert(c, [{**OK_ROW, "id": 9, "s": "abcdefgh"}]), 1100, "exceeds max length"),
    (
        "NaN in a vector",
        lambda m, c: m.insert(c, [{**OK_ROW, "id": 9, "v": [math.nan, 0.0, 0.0, 0.0]}]),
        1100,
        "NaN or Inf",
    ),
    (
        "infinity in a vector",
        lambda m, c: m.insert(c, [{**OK_ROW, "id": 9, "v": [math.inf, 0.0, 0.0, 0.0]}]),
        1100,
        "NaN or Inf",
    ),
    (
        "duplicate keys in one upsert",
        lambda m, c: m.upsert(c, [{**OK_ROW, "id": 9}, {**OK_ROW, "id": 9}]),
        1100,
        "duplicate primary keys",
    ),
    ("malformed filter", lambda m, c: m.query(c, filter="id >> 3"), 1100, "cannot parse expression"),
    ("unknown field in a filter", lambda m, c: m.delete(c, filter="idd > 3"), 1100, "field 'idd' does not exist"),
    (
        "search limit out of range",
        lambda m, c: m.search(c, data=[[0.0, 0.0, 0.0, 1.0]], limit=20000),
        1100,
        r"topk \[20000\] is invalid",
    ),
    (
        "query window out of range",
        lambda m, c: m.query(c, filter="id > 0", limit=20000),
        1100,
        "invalid max query result window",
    ),
    (
        "search dimension mismatch",
        lambda m, c: m.search(c, data=[[0.0, 0.0, 1.0]], limit=3),
        1100,
        r"the dim \(3\) of search data",
    ),
    (
        "NaN in a search vector",
        lambda m, c: m.search(c, data=[[math.nan, 0.0, 0.0, 1.0]], limit=3),
        1100,
        "contains NaN or Inf",
    ),
    (
        "unknown output field",
        lambda m, c: m.query(c, filter="id > 0", output_fields=["zz"]),
        1100,
        "field zz not exist",
    ),
    ("invalid index params", lambda m, c: m.create_index(c, _hnsw(m, 100000)), 1100, "M must be in"),
    (
        "unknown partition",
        lambda m, c: m.insert(c, [{**OK_ROW, "id": 9}], partition_name="p404"),
        200,
        r"partition not found\[partition=p404\]",
    ),
]


def _hnsw(milvus: MilvusClient, m: int) -> object:
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="HNSW", metric_type="L2", params={"M": m})
    return params


@pytest.mark.parametrize(("case", "call", "code", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_with_the_milvus_error_and_changes_nothing(
    milvus: MilvusClient, coll: str, case: str, call: Callable[[MilvusClient, str], object], code: int, message: str
) -> None:
    before = _rows(milvus, coll)
    with pytest.raises(MilvusException, match=message) as err:
        call(milvus, coll)
    assert err.value.code == code, (case, err.value)
    assert _rows(milvus, coll) == before
