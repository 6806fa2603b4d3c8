"""merge_topk's newest-version dedupe, range search and group by, against a plain model.

The model below is the specification written the slow, obvious way: one
query at a time, dicts and sorted lists. Hypothesis throws shards with
duplicate keys, equal distances, several versions and null group values at
both and compares which input rows come out, in which order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segcore.segments.reduce import in_range, merge_topk

METRICS = ("L2", "IP", "COSINE")
# A coarse grid so that equal distances (ties) are common.
DISTANCES = st.sampled_from([-1.5, -0.5, 0.0, 0.25, 0.5, 1.0, 1.1, 2.0, 3.5])
BOUNDS = st.none() | st.sampled_from([-1.0, 0.0, 0.25, 0.5, 1.0, 1.1, 2.0, 3.0])
GROUP_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "int": st.none() | st.integers(-2, 2),
    "str": st.none() | st.sampled_from(["a", "b", "c", ""]),
    "bool": st.none() | st.booleans(),
}
GROUP_TYPES = {"int": pa.int64(), "str": pa.string(), "bool": pa.bool_()}

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    rid: int
    query: int
    pk: Any
    distance: float
    ts: int
    group: Any


def to_table(rows: list[Row], *, with_ts: bool, pk_type: pa.DataType, group_type: pa.DataType) -> pa.Table:
    columns: dict[str, pa.Array] = {
        "query": pa.array([r.query for r in rows], pa.int32()),
        "pk": pa.array([r.pk for r in rows], pk_type),
        "distance": pa.array([r.distance for r in rows], pa.float32()),
        "g": pa.array([r.group for r in rows], group_type),
        "rid": pa.array([r.rid for r in rows], pa.int64()),
    }
    if with_ts:
        columns["_ts"] = pa.array([r.ts for r in rows], pa.uint64())
    return pa.table(columns)


def model(
    shards: list[list[Row]],
    *,
    metric: str,
    with_ts: bool,
    topk: int,
    offset: int = 0,
    radius: float | None = None,
    range_filter: float | None = None,
    group_by: bool = False,
    group_size: int = 1,
) -> list[int]:
    """The rids merge_topk should return, in order."""
    larger = metric != "L2"
    rows = [r for shard in shards for r in shard]  # rid order is input order

    def score(r: Row) -> float:
        return -r.distance if larger else r.distance

    def inside(r: Row) -> bool:
        d = np.float32(r.distance)
        if radius is not None and not (d > np.float32(radius) if larger else d < np.float32(radius)):
            return False
        if range_filter is not None:
            bound = np.float32(range_filter)
            return bool(d <= bound if larger else d >= bound)
        return True

    out: list[int] = []
    for q in sorted({r.query for r in rows}):
        kept: dict[Any, Row] = {}
        for r in (r for r in rows if r.query == q):
            prefer = ((-r.ts if with_ts else 0), score(r), r.rid)
            old = kept.get(r.pk)
            if old is None or prefer < ((-old.ts if with_ts else 0), score(old), old.rid):
                kept[r.pk] = r
        hits = sorted((r for r in kept.values() if inside(r)), key=lambda r: (score(r), r.rid))
        if not group_by:
            out += [r.rid for r in hits[offset : offset + topk]]
            continue
        groups: dict[Any, list[Row]] = {}  # insertion order: by best hit
        for r in hits:
            groups.setdefault(r.group, []).append(r)
        for members in list(groups.values())[offset : offset + topk]:
            out += [r.rid for r in members[:group_size]]
    return out


@st.composite
def shards_of(draw: st.DrawFn, group_kind: str, *, agreeing: bool = False) -> list[list[Row]]:
    """1-3 shards of hits; ``agreeing``: a key's copies are identical (replicas)."""
    shards: list[list[Row]] = []
    rid = 0
    canonical: dict[tuple[int, int], tuple[float, int, Any]] = {}
    for _ in range(draw(st.integers(1, 3))):
        shard = []
        for _ in range(draw(st.integers(0, 12))):
            query, pk = draw(st.integers(0, 2)), draw(st.integers(0, 6))
            fresh = (draw(DISTANCES), draw(st.integers(0, 3)), draw(GROUP_VALUES[group_kind]))
            distance, ts, group = canonical.setdefault((query, pk), fresh) if agreeing else fresh
            shard.append(Row(rid=rid, query=query, pk=pk, distance=distance, ts=ts, group=group))
            rid += 1
        shards.append(shard)
    return shards


def run(
    shards: list[list[Row]], *, with_ts: bool, string_keys: bool, group_kind: str, **kwargs: Any
) -> list[int]:
    pk_type = pa.string() if string_keys else pa.int64()
    if string_keys:
        shards = [[_with_string_key(r) for r in shard] for shard in shards]
    tables = [
        to_table(s, with_ts=with_ts, pk_type=pk_type, group_type=GROUP_TYPES[group_kind])
        for s in shards
    ]
    merged = merge_topk(tables, pk_field="pk", **kwargs)
    assert merged.column_names == tables[0].column_names
    assert merged.schema == tables[0].schema
    rids: list[int] = merged.column("rid").to_pylist()
    return rids


def _with_string_key(r: Row) -> Row:
    return Row(rid=r.rid, query=r.query, pk=f"k{r.pk}", distance=r.distance, ts=r.ts, group=r.group)


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    group_kind = draw(st.sampled_from(sorted(GROUP_VALUES)))
    return {
        "shards": draw(shards_of(group_kind)),
        "group_kind": group_kind,
        "with_ts": draw(st.booleans()),
        "string_keys": draw(st.booleans()),
        "metric": draw(st.sampled_from(METRICS)),
        "topk": draw(st.integers(1, 5)),
        "offset": draw(st.integers(0, 3)),
    }


# ------------------------------------------------------------ properties


@SETTINGS
@given(case=cases())
def test_dedupe_and_paging_match_the_model(case: dict[str, Any]) -> None:
    args = {k: case[k] for k in ("metric", "topk", "offset")}
    expected = model(case["shards"], with_ts=case["with_ts"], **args)
    assert run(**case) == expected


@SETTINGS
@given(case=cases(), radius=BOUNDS, range_filter=BOUNDS)
def test_range_search_matches_the_model(
    case: dict[str, Any], radius: float | None, range_filter: float | None
) -> None:
    args = {k: case[k] for k in ("metric", "topk", "offset")}
    args |= {"radius": radius, "range_filter": range_filter}
    expected = model(case["shards"], with_ts=case["with_ts"], **args)
    assert run(**case, radius=radius, range_filter=range_filter) == expected


@SETTINGS
@given(case=cases(), group_size=st.integers(1, 3), radius=BOUNDS)
def test_group_by_matches_the_model(
    case: dict[str, Any], group_size: int, radius: float | None
) -> None:
    args = {k: case[k] for k in ("metric", "topk", "offset")}
    args |= {"group_size": group_size, "radius": radius}
    expected = model(case["shards"], with_ts=case["with_ts"], group_by=True, **args)
    assert run(**case, group_by="g", group_size=group_size, radius=radius) == expected


@st.composite
def one_vchannel(draw: st.DrawFn, metric: str, topk: int) -> list[Row]:
    """One delegator's hits: distinct keys per query; often already ranked and paged (its
    usual answer), sometimes in any order or with more than ``topk`` rows for a query."""
    rows = []
    for query in range(draw(st.integers(0, 3))):
        pks = draw(st.lists(st.integers(0, 9), unique=True, max_size=7))
        rows += [Row(rid=0, query=query, pk=pk, distance=draw(DISTANCES), ts=0, group=None) for pk in pks]
    if draw(st.booleans()):
        larger = metric != "L2"
        rows.sort(key=lambda r: (r.query, -r.distance if larger else r.distance))
        if draw(st.booleans()):  # paged: each query's best topk
            rows = [r for q in range(4) for r in [r for r in rows if r.query == q][:topk]]
    else:
        rows = draw(st.permutations(rows))
    return [Row(rid=i, query=r.query, pk=r.pk, distance=r.distance, ts=0, group=None) for i, r in enumerate(rows)]


@SETTINGS
@given(data=st.data())
def test_one_vchannel_with_distinct_keys_matches_the_model(data: st.DataObject) -> None:
    """The proxy's merge of one vchannel (``distinct_keys``): an input that is already the
    answer comes back as it is, any other is ranked and paged, both as the model says."""
    metric, topk = data.draw(st.sampled_from(METRICS)), data.draw(st.integers(1, 5))
    rows = data.draw(one_vchannel(metric, topk))
    expected = model([rows], metric=metric, with_ts=False, topk=topk)
    assert run([rows], with_ts=False, string_keys=False, group_kind="int", metric=metric, topk=topk,
               distinct_keys=True) == expected


@SETTINGS
@given(data=st.data())
def test_two_level_reduce_equals_one_over_replicas(data: st.DataObject) -> None:
    """Inner calls with offset 0 and topk + offset, then the outer call (no grouping)."""
    group_kind = "int"
    metric = data.draw(st.sampled_from(METRICS))
    topk, offset = data.draw(st.integers(1, 4)), data.draw(st.integers(0, 3))
    shards = data.draw(shards_of(group_kind, agreeing=True))
    with_ts = data.draw(st.booleans())
    tables = [
        to_table(s, with_ts=with_ts, pk_type=pa.int64(), group_type=pa.int64()) for s in shards
    ]
    inner = [
        merge_topk([t], topk=topk + offset, metric=metric, pk_field="pk") for t in tables
    ]
    two_level = merge_topk(inner, topk=topk, metric=metric, pk_field="pk", offset=offset)
    one = merge_topk(tables, topk=topk, metric=metric, pk_field="pk", offset=offset)
    assert two_level.column("pk").to_pylist() == one.column("pk").to_pylist()
    assert two_level.column("query").to_pylist() == one.column("query").to_pylist()
    assert two_level.column("distance").to_pylist() == one.column("distance").to_pylist()


# ------------------------------------------------------------- examples


def table(rows: list[tuple[int, int, float, int, Any]], **extra: pa.Array) -> pa.Table:
    """``(query, pk, distance, ts, group)`` rows; ``_ts`` included."""
    queries, pks, dists, stamps, groups = zip(*rows, strict=True) if rows else ((),) * 5
    return pa.table(
        {
            "query": pa.array(queries, pa.int32()),
            "pk": pa.array(pks, pa.int64()),
            "distance": pa.array(dists, pa.float32()),
            "_ts": pa.array(stamps, pa.uint64()),
            "g": pa.array(groups, pa.string()),
            **extra,
        }
    )


def test_newest_version_wins_over_a_better_distance() -> None:
    old = table([(0, 7, 0.1, 10, "old")])
    new = table([(0, 7, 0.9, 20, "new"), (0, 8, 0.5, 5, "x")])
    merged = merge_topk([old, new], topk=5, metric="L2", pk_field="pk")
    assert merged.column("pk").to_pylist() == [8, 7]
    assert merged.column("g").to_pylist() == ["x", "new"]
    # Without _ts the best distance wins, as before.
    merged = merge_topk(
        [old.drop_columns(["_ts"]), new.drop_columns(["_ts"])], topk=5, metric="L2", pk_field="pk"
    )
    assert merged.column("g").to_pylist() == ["old", "x"]


def test_equal_timestamps_fall_back_to_the_best_distance() -> None:
    a = table([(0, 7, 0.75, 3, "a")])
    b = table([(0, 7, 0.25, 3, "b")])
    assert merge_topk([a, b], topk=1, metric="L2", pk_field="pk")["g"].to_pylist() == ["b"]
    assert merge_topk([a, b], topk=1, metric="IP", pk_field="pk")["g"].to_pylist() == ["a"]


def test_the_range_applies_to_the_newest_version_only() -> None:
    old = table([(0, 7, 0.5, 1, "old")])
    new = table([(0, 7, 5.0, 2, "new")])
    merged = merge_topk([old, new], topk=5, metric="L2", pk_field="pk", radius=1.0)
    assert merged.num_rows == 0


@pytest.mark.parametrize(
    ("metric", "radius", "range_filter", "kept"),
    [
        ("L2", 2.0, 0.5, [0.5, 1.0]),  # range_filter <= d < radius
        ("L2", 2.0, None, [0.0, 0.5, 1.0]),
        ("IP", 0.5, 2.0, [1.0, 2.0]),  # radius < d <= range_filter
        ("COSINE", 0.5, None, [1.0, 2.0, 3.0]),
        ("IP", None, 1.0, [0.0, 0.5, 1.0]),
    ],
)
def test_range_bounds(
    metric: str, radius: float | None, range_filter: float | None, kept: list[float]
) -> None:
    d = np.array([0.0, 0.5, 1.0, 2.0, 3.0], dtype=np.float32)
    mask = in_range(d, metric, radius=radius, range_filter=range_filter)
    assert sorted(d[mask].tolist()) == kept


def test_group_by_pages_whole_groups_and_keeps_them_contiguous() -> None:
    hits = table(
        [
            (0, 1, 0.1, 1, "a"),
            (0, 2, 0.2, 1, "b"),
            (0, 3, 0.3, 1, "a"),
            (0, 4, 0.4, 1, None),
            (0, 5, 0.5, 1, "b"),
            (0, 6, 0.6, 1, "a"),
            (0, 7, 0.7, 1, None),
            (1, 1, 0.9, 1, "a"),
        ]
    )
    merged = merge_topk([hits], topk=2, metric="L2", pk_field="pk", group_by="g", group_size=2)
    assert merged.column("pk").to_pylist() == [1, 3, 2, 5, 1]
    assert merged.column("g").to_pylist() == ["a", "a", "b", "b", "a"]
    merged = merge_topk(
        [hits], topk=5, metric="L2", pk_field="pk", group_by="g", group_size=3, offset=1
    )
    # Query 0 skips group "a"; null is a group of its own; query 1 has one group only.
    assert merged.column("pk").to_pylist() == [2, 5, 4, 7]
    assert merged.column("g").to_pylist() == ["b", "b", None, None]


def test_short_groups_are_kept() -> None:
    hits = table([(0, 1, 0.1, 1, "a"), (0, 2, 0.2, 1, "b"), (0, 3, 0.3, 1, "b")])
    merged = merge_topk([hits], topk=2, metric="L2", pk_field="pk", group_by="g", group_size=2)
    assert merged.column("pk").to_pylist() == [1, 2, 3]


def test_group_by_on_empty_results() -> None:
    empty = table([])
    merged = merge_topk([empty], topk=2, metric="L2", pk_field="pk", group_by="g")
    assert merged.num_rows == 0 and merged.schema == empty.schema


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group_size": 0}, "group_size must be at least 1"),
        ({"group_by": "nope"}, "lack the group by column 'nope'"),
    ],
)
def test_invalid_group_arguments(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        merge_topk([table([(0, 1, 0.1, 1, "a")])], topk=1, metric="L2", pk_field="pk", **kwargs)
