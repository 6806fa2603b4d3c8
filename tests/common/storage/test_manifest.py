"""SegmentManifest: JSON round trip, versioning, invariants, corrupt documents."""

from __future__ import annotations

import json

import pytest

from common.errors import InvalidArgument
from common.storage import CorruptObject, DeltaLog, InsertLog, SegmentLevel, SegmentManifest


def _insert(log_id: int, rows: int = 10) -> InsertLog:
    return InsertLog(
        log_id=log_id,
        rows=rows,
        min_ts=100,
        max_ts=2**63 + 5,  # hybrid timestamps exceed 2**53: must survive JSON exactly
        files={103: f"insert_log/1/2/3/103/{log_id}.parquet", 0: f"insert_log/1/2/3/0/{log_id}.parquet"},
    )


def _delta(log_id: int) -> DeltaLog:
    return DeltaLog(log_id=log_id, rows=3, min_ts=7, max_ts=9, path=f"delta_log/1/2/3/{log_id}.parquet")


def _base(level: SegmentLevel = SegmentLevel.L1, partition_id: int = 2) -> SegmentManifest:
    return SegmentManifest(segment_id=3, collection_id=1, partition_id=partition_id, vchannel="dml_0_1v0", level=level)


def test_with_logs_makes_new_versions() -> None:
    m0 = _base()
    m1 = m0.with_insert_log(_insert(1), "stats_log/1/2/3/1")
    m2 = m1.with_insert_log(_insert(2, rows=5), "stats_log/1/2/3/2")
    m3 = m2.with_delta_log(_delta(7))
    assert [m.version for m in (m0, m1, m2, m3)] == [0, 1, 2, 3]
    assert (m0.rows, m3.rows) == (0, 15)
    assert m0.insert_logs == ()  # the old version is untouched
    assert m3.stats_logs == ("stats_log/1/2/3/1", "stats_log/1/2/3/2")
    assert list(m3.insert_logs[0].files) == [0, 103]
    assert m3.files() == [
        "insert_log/1/2/3/0/1.parquet",
        "insert_log/1/2/3/103/1.parquet",
        "insert_log/1/2/3/0/2.parquet",
        "insert_log/1/2/3/103/2.parquet",
        "delta_log/1/2/3/7.parquet",
        "stats_log/1/2/3/1",
        "stats_log/1/2/3/2",
    ]


def test_json_round_trip() -> None:
    manifest = _base().with_insert_log(_insert(1), "stats_log/1/2/3/1").with_delta_log(_delta(2))
    data = manifest.to_json()
    assert SegmentManifest.from_json(data) == manifest
    doc = json.loads(data)
    assert doc["format"] == 1 and doc["level"] == "L1"
    assert doc["insert_logs"][0]["files"] == {
        "0": "insert_log/1/2/3/0/1.parquet",
        "103": "insert_log/1/2/3/103/1.parquet",
    }
    assert doc["insert_logs"][0]["max_ts"] == 2**63 + 5


def test_l0_segment_with_all_partitions() -> None:
    manifest = _base(SegmentLevel.L0, partition_id=-1).with_delta_log(_delta(1))
    assert SegmentManifest.from_json(manifest.to_json()) == manifest
    with pytest.raises(InvalidArgument, match="L0"):
        manifest.with_insert_log(_insert(2), "stats_log/1/-1/3/2")


@pytest.mark.parametrize(
    "change",
    [
        {"rows": 3},
        {"level": "L2"},
        {"partition_id": -2},
        {"vchannel": ""},
        {"version": -1},
        {"insert_logs": (_insert(1), _insert(1)), "rows": 20},
    ],
)
def test_invariants_are_checked(change: dict[str, object]) -> None:
    fields = {"segment_id": 3, "collection_id": 1, "partition_id": 2, "vchannel": "v", "level": "L1", **change}
    with pytest.raises(InvalidArgument):
        SegmentManifest(**fields)  # type: ignore[arg-type]


def test_log_invariants_are_checked() -> None:
    with pytest.raises(InvalidArgument):
        InsertLog(log_id=1, rows=1, min_ts=5, max_ts=4, files={0: "x"})
    with pytest.raises(InvalidArgument):
        InsertLog(log_id=1, rows=1, min_ts=1, max_ts=4, files={})
    with pytest.raises(InvalidArgument):
        DeltaLog(log_id=1, rows=-1, min_ts=1, max_ts=4, path="x")


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"format": 2}',
        b'{"format": 1, "segment_id": 1}',
        b'{"format":1,"collection_id":1,"partition_id":2,"segment_id":3,"vchannel":"v","level":"L1",'
        b'"version":1,"rows":0,"insert_logs":{},"delta_logs":[],"stats_logs":[]}',
        b'{"format":1,"collection_id":1,"partition_id":2,"segment_id":3,"vchannel":"v","level":"L1",'
        b'"version":1,"rows":1,"insert_logs":[{"log_id":1,"rows":1,"min_ts":1,"max_ts":1,"files":{"x":"p"}}],'
        b'"delta_logs":[],"stats_logs":[]}',
        b'{"format":1,"collection_id":"1","partition_id":2,"segment_id":3,"vchannel":"v","level":"L1",'
        b'"version":1,"rows":0,"insert_logs":[],"delta_logs":[],"stats_logs":[]}',
    ],
)
def test_corrupt_documents_are_refused(data: bytes) -> None:
    with pytest.raises(CorruptObject):
        SegmentManifest.from_json(data)
