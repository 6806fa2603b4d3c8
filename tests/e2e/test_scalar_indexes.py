"""Scalar and JSON indexes through pymilvus: create, load, filter, drop; each index type on each field type.

Before, ``create_index`` on a scalar, ARRAY or JSON field was refused (code
701). Now the index is built per sealed segment (saved beside it in
``index_files/``), filters read it instead of the column, and every answer
is the one the scan gives: each filter is checked against the rows computed
in Python, with the index, and again after ``drop_index`` (scanning).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.e2e.test_compaction import wait_compaction
from tests.e2e.util import unique_name
from tests.harness import Standalone

ROWS = 1500  # above Milvus's 1,024-row threshold: the coordinator builds each segment's index
WORDS = ["apple", "apricot", "banana", "cherry", "grape", "grapefruit", "kiwi", "lemon"]


def _rows() -> list[dict[str, Any]]:
    rng = random.Random(30)
    out = []
    for i in range(ROWS):
        meta: dict[str, Any] = {"price": rng.choice([rng.randint(0, 40), rng.random() * 40, "n/a", None])}
        if rng.random() < 0.8:
            meta["tags"] = [rng.choice(WORDS) for _ in range(rng.randint(0, 3))]
        meta["ok"] = rng.random() < 0.5
        meta["sp"] = rng.choice([str(rng.randint(0, 40)), rng.randint(0, 40), rng.random() * 40, "n/a"])
        out.append({
            "id": i,
            "i64": rng.randint(-50, 50),
            "i8": rng.randint(-5, 5),
            "flag": rng.random() < 0.3,
            "f": round(rng.random() * 10, 2),
            "s": rng.choice(WORDS) + str(rng.randint(0, 3)),
            "arr": [rng.randint(0, 9) for _ in range(rng.randint(0, 4))],
            "sarr": [rng.choice(WORDS) for _ in range(rng.randint(0, 3))],
            "j": meta,
            "color": rng.choice(["red", "green", "blue"]),  # a dynamic key
            "v": [rng.random(), rng.random(), 0.0, 1.0],
        })
    return out


def _schema() -> Any:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("i64", DataType.INT64)
    schema.add_field("i8", DataType.INT8)
    schema.add_field("flag", DataType.BOOL)
    schema.add_field("f", DataType.FLOAT)
    schema.add_field("s", DataType.VARCHAR, max_length=64)
    schema.add_field("arr", DataType.ARRAY, element_type=DataType.INT64, max_capacity=8)
    schema.add_field("sarr", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=8, max_length=32)
    schema.add_field("j", DataType.JSON)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    return schema


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


Check = tuple[str, Callable[[dict[str, Any]], bool]]

# (field, index params, filters with the rows they must match)
CASES: list[tuple[str, dict[str, Any], list[Check]]] = [
    ("i64", {"index_type": "INVERTED"}, [("i64 == 7", lambda r: r["i64"] == 7),
                                          ("i64 in [1, 2, 3]", lambda r: r["i64"] in (1, 2, 3))]),
    ("i64", {"index_type": "STL_SORT"}, [("i64 >= -3 and i64 < 4", lambda r: -3 <= r["i64"] < 4),
                                          ("i64 > 2.5", lambda r: r["i64"] > 2.5)]),
    ("i8", {"index_type": "BITMAP"}, [("i8 != 0", lambda r: r["i8"] != 0)]),
    ("i64", {}, [("i64 <= -40 or i8 == 1", lambda r: r["i64"] <= -40 or r["i8"] == 1)]),  # AUTOINDEX
    ("flag", {"index_type": "BITMAP"}, [("flag == true", lambda r: r["flag"]),
                                         ("not flag and i8 > 2", lambda r: not r["flag"] and r["i8"] > 2)]),
    ("flag", {"index_type": "INVERTED"}, [("flag != true", lambda r: not r["flag"])]),
    ("f", {"index_type": "STL_SORT"}, [("f > 9.5", lambda r: r["f"] > 9.5)]),
    ("f", {"index_type": "INVERTED"}, [("f < 1", lambda r: r["f"] < 1)]),
    ("s", {"index_type": "INVERTED"}, [('s == "kiwi2"', lambda r: r["s"] == "kiwi2"),
                                        ('s like "ap%"', lambda r: r["s"].startswith("ap"))]),
    ("s", {"index_type": "Trie"}, [('s like "grape%"', lambda r: r["s"].startswith("grape"))]),
    ("s", {"index_type": "BITMAP"}, [('s in ["lemon0", "kiwi1"]', lambda r: r["s"] in ("lemon0", "kiwi1"))]),
    ("s", {"index_type": "STL_SORT"}, [('s > "grape"', lambda r: r["s"] > "grape")]),
    ("s", {"index_type": "NGRAM", "params": {"min_gram": 2, "max_gram": 3}},
     [('s like "%an%"', lambda r: "an" in r["s"]), ('s like "%rap%1"', lambda r: "rap" in r["s"][:-1]
                                                     and r["s"].endswith("1"))]),
    ("arr", {"index_type": "INVERTED"}, [("array_contains(arr, 3)", lambda r: 3 in r["arr"]),
                                          ("array_contains_all(arr, [1, 2])", lambda r: {1, 2} <= set(r["arr"]))]),
    ("sarr", {"index_type": "BITMAP"}, [('array_contains_any(sarr, ["kiwi", "lemon"])',
                                         lambda r: bool({"kiwi", "lemon"} & set(r["sarr"])))]),
    ("j", {"index_type": "INVERTED", "params": {"json_path": 'j["price"]', "json_cast_type": "double"}},
     [('j["price"] > 30', lambda r: _num(r["j"]["price"]) and r["j"]["price"] > 30),
      ('j["price"] != 7', lambda r: not (_num(r["j"]["price"]) and r["j"]["price"] == 7))]),
    ("j", {"index_type": "AUTOINDEX", "params": {"json_path": 'j["ok"]', "json_cast_type": "BOOL"}},
     [('j["ok"] == true', lambda r: r["j"]["ok"] is True)]),
    ("j", {"index_type": "INVERTED", "params": {"json_path": 'j["tags"]', "json_cast_type": "ARRAY_VARCHAR"}},
     [('json_contains(j["tags"], "kiwi")', lambda r: "kiwi" in r["j"].get("tags", []))]),
    ("color", {"index_type": "INVERTED", "params": {"json_cast_type": "varchar"}},
     [('color == "red"', lambda r: r["color"] == "red")]),
]


def _sp(r: dict[str, Any]) -> Any:
    """``j["sp"]`` where the filter compares it with a number (a string, converted or not, never does)."""
    value = r["j"]["sp"]
    return value if _num(value) else None


SP_CHECKS: list[Check] = [
    ('j["sp"] > 30', lambda r: _sp(r) is not None and _sp(r) > 30),
    ('j["sp"] in [1, 2, 3] or j["sp"] <= 0.5', lambda r: _sp(r) is not None and (_sp(r) in (1, 2, 3) or _sp(r) <= 0.5)),
    ('j["sp"] == "12"', lambda r: r["j"]["sp"] == "12"),  # a string: not the DOUBLE index's, scanned
]
STRING_TO_DOUBLE = {"json_path": 'j["sp"]', "json_cast_type": "DOUBLE", "json_cast_function": "STRING_TO_DOUBLE"}


def _ids(client: MilvusClient, name: str, expr: str) -> list[int]:
    rows = client.query(name, filter=expr, output_fields=["id"], consistency_level="Strong")
    return sorted(r["id"] for r in rows)


def _saved_scalar_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "storage").rglob("index_files/*/*/*/scalar-*.bin"))


@pytest.fixture(scope="module")
def collection(standalone: Standalone) -> Any:
    client = MilvusClient(standalone.uri)
    name = unique_name("scalaridx")
    client.create_collection(name, schema=_schema(), num_shards=1)
    rows = _rows()
    client.insert(name, rows)
    client.flush(name)
    index = client.prepare_index_params()
    index.add_index("v", metric_type="L2")
    client.create_index(name, index)
    try:
        yield name, rows
    finally:
        client.drop_collection(name)
        client.close()


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("field", "params", "checks"), CASES,
                         ids=[f"{c[0]}-{c[1].get('index_type', 'AUTO')}" for c in CASES])
def test_index_filters_as_the_scan_does(
    milvus: MilvusClient, standalone: Standalone, collection: Any, field: str, params: dict[str, Any],
    checks: list[Check],
) -> None:
    name, rows = collection
    before = set(_saved_scalar_files(standalone.data_dir))
    index = milvus.prepare_index_params()
    index.add_index(field, index_name=f"idx_{field}", **params)
    milvus.create_index(name, index, timeout=60)  # waits for Finished: every segment's index built
    assert set(_saved_scalar_files(standalone.data_dir)) - before, "no scalar index saved"
    desc = milvus.describe_index(name, f"idx_{field}")
    assert desc["index_type"] == params.get("index_type", "AUTOINDEX")
    milvus.load_collection(name)
    try:
        for expr, want in checks:
            expected = sorted(r["id"] for r in rows if want(r))
            assert _ids(milvus, name, expr) == expected, expr
        search = milvus.search(name, data=[[0.5, 0.5, 0, 1]], limit=5, filter=checks[0][0],
                               output_fields=["id"], consistency_level="Strong")
        assert {h["id"] for h in search[0]} <= set(r["id"] for r in rows if checks[0][1](r))
    finally:
        milvus.release_collection(name)
        milvus.drop_index(name, f"idx_{field}")
    milvus.load_collection(name)  # scanning again
    try:
        for expr, want in checks:
            assert _ids(milvus, name, expr) == sorted(r["id"] for r in rows if want(r)), expr
    finally:
        milvus.release_collection(name)


@pytest.mark.parametrize(
    ("field", "params", "message"),
    [
        ("j", {"index_type": "STL_SORT"}, "STL_SORT are only supported on numeric or varchar field, got JSON"),
        ("flag", {"index_type": "STL_SORT"}, "STL_SORT are only supported on numeric or varchar field, got Bool"),
        ("f", {"index_type": "BITMAP"}, "bitmap index are only supported on bool, int, string and array field"),
        ("id", {"index_type": "BITMAP"}, "create bitmap index on primary key not supported"),
        ("i64", {"index_type": "Trie"}, "TRIE are only supported on varchar field"),
        ("i64", {"index_type": "NGRAM", "params": {"min_gram": 2, "max_gram": 3}},
         "Ngram index can only be created on VARCHAR or JSON field"),
        ("s", {"index_type": "NGRAM", "params": {"min_gram": 4, "max_gram": 2}},
         "invalid min_gram or max_gram value for Ngram index"),
        ("j", {"index_type": "INVERTED"}, "json index must specify cast type"),
        ("j", {"index_type": "INVERTED", "params": {"json_cast_type": "INT"}}, "json_cast_type INT is not supported"),
        ("j", {"index_type": "INVERTED", "params": {"json_cast_type": "VARCHAR", "json_cast_function": "STRING_TO_DOUBLE"}},
         "json_cast_function STRING_TO_DOUBLE is not supported for json_cast_type VARCHAR"),
        ("i64", {"index_type": "HNSW", "metric_type": "L2"}, "index HNSW only supports vector data type"),
    ],
)
def test_bad_scalar_index_refused_with_milvus_message(
    milvus: MilvusClient, collection: Any, field: str, params: dict[str, Any], message: str
) -> None:
    name, _ = collection
    before = milvus.list_indexes(name)
    index = milvus.prepare_index_params()
    index.add_index(field, index_name="bad", **params)
    with pytest.raises(MilvusException) as err:
        milvus.create_index(name, index)
    assert err.value.code == 1100 and message in err.value.message, err.value
    assert milvus.list_indexes(name) == before


def test_several_json_paths_of_one_field_each_get_an_index(milvus: MilvusClient, collection: Any) -> None:
    name, rows = collection
    index = milvus.prepare_index_params()
    index.add_index("j", index_type="INVERTED", params={"json_path": 'j["price"]', "json_cast_type": "DOUBLE"})
    index.add_index("j", index_type="INVERTED", params={"json_path": 'j["ok"]', "json_cast_type": "BOOL"})
    milvus.create_index(name, index)
    try:
        names = set(milvus.list_indexes(name))
        assert {'j["price"]', 'j["ok"]'} <= names
        assert milvus.describe_index(name, 'j["ok"]')["json_cast_type"] == "BOOL"
        milvus.load_collection(name)
        expr = 'j["ok"] == true and j["price"] < 10'
        want = sorted(r["id"] for r in rows if r["j"]["ok"] and _num(r["j"]["price"]) and r["j"]["price"] < 10)
        assert _ids(milvus, name, expr) == want
    finally:
        milvus.release_collection(name)
        for index_name in ('j["price"]', 'j["ok"]'):
            milvus.drop_index(name, index_name)


@pytest.mark.timeout(180)
def test_string_to_double_index_filters_as_the_scan(milvus: MilvusClient, collection: Any) -> None:
    """A ``json_cast_function`` index is built, described with its function, and answers numeric filters on
    its path from the numbers there: a string that spells a number does not match, as in the scan."""
    name, rows = collection
    index = milvus.prepare_index_params()
    index.add_index("j", index_name="sp_double", index_type="INVERTED", params=STRING_TO_DOUBLE)
    milvus.create_index(name, index, timeout=60)
    desc = milvus.describe_index(name, "sp_double")
    assert (desc["json_path"], desc["json_cast_type"], desc["json_cast_function"]) == (
        'j["sp"]', "DOUBLE", "STRING_TO_DOUBLE"), desc
    assert any(isinstance(r["j"]["sp"], str) and r["j"]["sp"] != "n/a" and float(r["j"]["sp"]) > 30 for r in rows)
    for dropped in (False, True):
        milvus.load_collection(name)
        try:
            for expr, want in SP_CHECKS:
                assert _ids(milvus, name, expr) == sorted(r["id"] for r in rows if want(r)), (expr, dropped)
        finally:
            milvus.release_collection(name)
        if not dropped:
            milvus.drop_index(name, "sp_double")


@pytest.mark.timeout(300)
def test_index_saved_once_and_loaded_after_restart(tmp_path: Path) -> None:
    server = Standalone(tmp_path / "data")
    server.start()
    try:
        client = MilvusClient(server.uri)
        name = unique_name("scalar_restart")
        client.create_collection(name, schema=_schema(), num_shards=1)
        rows = _rows()
        client.insert(name, rows)
        client.flush(name)
        index = client.prepare_index_params()
        index.add_index("v", metric_type="L2")
        index.add_index("i64", index_type="STL_SORT")
        index.add_index("j", index_type="INVERTED", params={"json_path": 'j["price"]', "json_cast_type": "DOUBLE"})
        index.add_index("j", index_name="sp_double", index_type="INVERTED", params=STRING_TO_DOUBLE)  # named: waited for
        client.create_index(name, index)
        saved = {p: p.stat().st_mtime_ns for p in _saved_scalar_files(server.data_dir)}
        assert len(saved) == 3
        client.load_collection(name)
        expr = 'i64 > 40 or j["price"] == 3 or j["sp"] >= 39'
        want = sorted(r["id"] for r in rows if r["i64"] > 40 or (_num(r["j"]["price"]) and r["j"]["price"] == 3)
                      or (_sp(r) is not None and _sp(r) >= 39))
        assert _ids(client, name, expr) == want
        client.close()
        server.stop()
        server.start()
        client = MilvusClient(server.uri)
        client.load_collection(name)
        assert _ids(client, name, expr) == want
        # Loaded from the saved files, not built again.
        assert {p: p.stat().st_mtime_ns for p in _saved_scalar_files(server.data_dir)} == saved
        client.close()
    finally:
        server.stop()
        server.kill()


@pytest.mark.timeout(600)
def test_compaction_output_gets_the_scalar_index(milvus: MilvusClient, standalone: Standalone) -> None:
    """The Spark jobs that fold deletes into segments and merge them build each output's scalar indexes
    beside it (a worker that loads the output restores them), and filters answer as before."""
    name = unique_name("scalar_compact")
    milvus.create_collection(name, schema=_schema(), num_shards=1)
    rows = _rows()
    for part in (rows[:700], rows[700:]):  # two segments, merged by the compaction
        milvus.insert(name, part)
        milvus.flush(name)
    index = milvus.prepare_index_params()
    index.add_index("v", metric_type="L2", index_type="FLAT")
    index.add_index("i64", index_type="STL_SORT")
    index.add_index("j", index_type="INVERTED", params={"json_path": 'j["price"]', "json_cast_type": "DOUBLE"})
    milvus.create_index(name, index)
    milvus.load_collection(name)
    flushed = {s.segment_id for s in milvus.list_persistent_segments(name)}
    deleted = {0, 1, 800}
    milvus.delete(name, ids=sorted(deleted))
    milvus.flush(name)
    for _ in range(2):  # the L0 deletes folded into the segments, then the segments merged
        wait_compaction(milvus, milvus.compact(name))
    segments = {s.segment_id for s in milvus.list_persistent_segments(name) if s.level == 2}
    outputs = segments - flushed
    assert outputs, f"nothing compacted: {sorted(flushed)} -> {sorted(segments)}"
    collection_id = str(milvus.describe_collection(name)["collection_id"])
    for segment in outputs:
        saved = [p for p in _saved_scalar_files(standalone.data_dir) if p.parts[-4:-2] == (collection_id, str(segment))]
        assert len(saved) == 2, f"compaction output {segment} has no scalar index files"
    expr = 'i64 < -45 or j["price"] >= 39'
    want = sorted(r["id"] for r in rows if r["id"] not in deleted
                  and (r["i64"] < -45 or (_num(r["j"]["price"]) and r["j"]["price"] >= 39)))
    assert _ids(milvus, name, expr) == want
    milvus.drop_collection(name)
