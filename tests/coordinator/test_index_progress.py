"""Index progress: rows of the sealed segments whose index is saved, read from the index files."""

from __future__ import annotations

from pathlib import Path

from common.segment import SegmentLevel, SegmentMeta, SegmentState
from common.storage.objectstore import ObjectStore
from coordinator.data.index_progress import MIN_ROWS_TO_INDEX, index_progress, saved_indexes


def _segment(sid: int, rows: int, level: SegmentLevel = SegmentLevel.L1) -> SegmentMeta:
    return SegmentMeta(segment_id=sid, collection_id=5, partition_id=6, vchannel="v", state=SegmentState.FLUSHED,
                       rows=rows, level=level, manifest=f"m/{sid}.json")


def test_only_segments_with_a_saved_meta_count_as_indexed(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(tmp_path.as_uri())
    store.write_bytes("index_files/5/1/77/meta.json", b"{}")
    store.write_bytes("index_files/5/2/77/graph-00000000.bin", b"x")  # data without its meta: not done
    store.write_bytes("index_files/5/3/78/meta.json", b"{}")  # another index
    store.write_bytes("index_files/6/2/77/meta.json", b"{}")  # another collection
    saved = saved_indexes(store, 5)
    assert saved == {(1, 77), (3, 78)}
    segments = [_segment(1, 1100), _segment(2, 1050), _segment(3, 1030), _segment(4, 0),
                _segment(9, 7000, SegmentLevel.L0)]
    progress = index_progress(saved, segments, 77, index_type="HNSW")
    assert (progress.indexed_rows, progress.total_rows) == (1100, 3180)
    assert saved_indexes(store, 42) == set()


def test_segments_that_need_no_build_count_as_indexed() -> None:
    """Milvus marks them Finished without building: fewer rows than the threshold, or FLAT / BIN_FLAT."""
    small, big = _segment(1, MIN_ROWS_TO_INDEX - 1), _segment(2, MIN_ROWS_TO_INDEX)
    progress = index_progress(set(), [small, big], 77, index_type="IVF_FLAT")
    assert (progress.indexed_rows, progress.total_rows) == (MIN_ROWS_TO_INDEX - 1, 2 * MIN_ROWS_TO_INDEX - 1)
    for no_train in ("FLAT", "BIN_FLAT", "flat"):
        progress = index_progress(set(), [small, big], 77, index_type=no_train)
        assert progress.indexed_rows == progress.total_rows == 2 * MIN_ROWS_TO_INDEX - 1


def test_failed_builds_of_unindexed_segments_make_milvus_fail_reason() -> None:
    segments = [_segment(3, 1100), _segment(1, 1200), _segment(2, 1300)]
    failures = {(3, 77): "M must be in [2, 2048]", (1, 77): "bad", (2, 78): "another index", (9, 77): "gone"}
    progress = index_progress({(1, 77)}, segments, 77, index_type="HNSW", failures=failures)
    # Segment 1 is saved after all (a build elsewhere); 2 failed under another index only.
    assert progress.fail_reason == "3: M must be in [2, 2048];"
    assert (progress.indexed_rows, progress.total_rows) == (1200, 3600)
    assert index_progress(set(), segments, 77, index_type="HNSW").fail_reason == ""
