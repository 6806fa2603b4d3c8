"""Path builders: the exact layout of README.md, L0 partitions, prefixes, refused ids."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from common.storage.layout import (
    ALL_PARTITIONS,
    collection_prefixes,
    delta_log_path,
    insert_log_path,
    manifest_path,
    manifest_prefix,
    manifest_version,
    segment_prefixes,
    stats_log_path,
)
from common.storage.objectstore import check_rel_path


def test_paths_follow_the_documented_layout() -> None:
    assert insert_log_path(1, 2, 3, 0, 7) == "insert_log/1/2/3/0/7.parquet"
    assert insert_log_path(1, 2, 3, 103, 7) == "insert_log/1/2/3/103/7.parquet"
    assert delta_log_path(1, 2, 3, 8) == "delta_log/1/2/3/8.parquet"
    assert stats_log_path(1, 2, 3, 7) == "stats_log/1/2/3/7"
    assert manifest_path(1, 2, 3, 5) == "manifests/1/2/3/000000000005.json"
    assert manifest_prefix(1, 2, 3) == "manifests/1/2/3"


def test_l0_partition_minus_one_makes_valid_paths() -> None:
    path = delta_log_path(1, ALL_PARTITIONS, 9, 4)
    assert path == "delta_log/1/-1/9/4.parquet"
    assert check_rel_path(path) == path
    assert manifest_path(1, -1, 9, 1) == "manifests/1/-1/9/000000000001.json"


def test_prefixes() -> None:
    assert segment_prefixes(1, 2, 3) == ["insert_log/1/2/3", "delta_log/1/2/3", "stats_log/1/2/3", "manifests/1/2/3"]
    assert collection_prefixes(42) == ["insert_log/42", "delta_log/42", "stats_log/42", "manifests/42"]


def test_manifest_versions_sort_by_name_and_parse_back() -> None:
    paths = [manifest_path(1, 2, 3, v) for v in (10, 2, 100, 1)]
    assert [manifest_version(p) for p in sorted(paths)] == [1, 2, 10, 100]
    assert manifest_version("manifests/1/2/3/12.json") is None
    assert manifest_version("manifests/1/2/3/000000000001.txt") is None


@pytest.mark.parametrize(
    "build",
    [
        lambda: insert_log_path(-1, 2, 3, 0, 1),
        lambda: insert_log_path(1, -2, 3, 0, 1),
        lambda: insert_log_path(1, 2, 3, -1, 1),
        lambda: delta_log_path(1, 2, -3, 1),
        lambda: stats_log_path(1, 2, 3, True),
        lambda: manifest_path(1, 2, 3, 10**12),
        lambda: manifest_path(1, 2, 3, -1),
        lambda: collection_prefixes("1"),  # type: ignore[arg-type]  # the point of the test
    ],
)
def test_bad_ids_are_refused(build: object) -> None:
    with pytest.raises(InvalidArgument):
        build()  # type: ignore[operator]
