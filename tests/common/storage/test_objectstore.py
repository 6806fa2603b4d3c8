"""ObjectStore on both backends (local directory, S3 over HTTP), plus URI parsing and atomic local writes."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from common.errors import InvalidArgument, StrataError
from common.storage import ObjectNotFound, ObjectStore
from common.storage.objectstore import check_rel_path
from tests.common.storage.conftest import S3Server

# ---------------------------------------------------------------- both backends


class _Boom(Exception):
    pass


def test_bytes_round_trip_and_overwrite(store: ObjectStore) -> None:
    store.write_bytes("a/b/c.bin", b"first")
    assert store.read_bytes("a/b/c.bin") == b"first"
    store.write_bytes("a/b/c.bin", b"second, longer")
    assert store.read_bytes("a/b/c.bin") == b"second, longer"
    store.write_bytes("empty", b"")
    assert store.read_bytes("empty") == b""


def test_exists_and_delete(store: ObjectStore) -> None:
    assert not store.exists("x/y")
    store.write_bytes("x/y", b"1")
    assert store.exists("x/y")
    assert not store.exists("x")  # a directory is not an object
    store.delete("x/y")
    assert not store.exists("x/y")
    store.delete("x/y")  # missing is fine
    store.delete("never/there")


def test_missing_object_raises_not_found_naming_it(store: ObjectStore) -> None:
    with pytest.raises(ObjectNotFound, match="nope/file.bin") as err:
        store.read_bytes("nope/file.bin")
    assert isinstance(err.value, StrataError)
    with pytest.raises(ObjectNotFound, match="nope/t.parquet"):
        store.read_parquet("nope/t.parquet")


def test_list_is_recursive_relative_and_files_only(store: ObjectStore) -> None:
    before = datetime.now(UTC) - timedelta(minutes=5)
    store.write_bytes("p/a", b"1")
    store.write_bytes("p/q/b", b"22")
    store.write_bytes("p/q/r/c", b"333")
    store.write_bytes("pq/not-under-p", b"4444")
    entries = store.list("p")
    assert [(e.path, e.size) for e in entries] == [("p/a", 1), ("p/q/b", 2), ("p/q/r/c", 3)]
    assert all(e.mtime.tzinfo is not None and e.mtime >= before for e in entries)
    assert [e.path for e in store.list("p/q/")] == ["p/q/b", "p/q/r/c"]
    assert [e.path for e in store.list("")] == ["p/a", "p/q/b", "p/q/r/c", "pq/not-under-p"]
    assert store.list("missing") == []
    assert store.list("p/a") == []  # a file is not a prefix


def test_delete_prefix_removes_only_that_directory(store: ObjectStore) -> None:
    for path in ("s/1/a", "s/1/b/c", "s/10/a", "s/2/a"):
        store.write_bytes(path, b"x")
    store.delete_prefix("s/1")
    assert [e.path for e in store.list("s")] == ["s/10/a", "s/2/a"]
    store.delete_prefix("s/1")  # again: nothing there
    store.delete_prefix("never")
    store.delete_prefix("")
    assert store.list("") == []


def test_parquet_round_trip_with_column_projection(store: ObjectStore) -> None:
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "v": pa.FixedSizeListArray.from_arrays(pa.array([0.5] * 6, pa.float32()), 2),
            "s": pa.array(["a", None, "c"]),
        }
    )
    store.write_parquet("t/x.parquet", table)
    assert store.read_parquet("t/x.parquet").equals(table)
    assert store.read_parquet("t/x.parquet", columns=["s"]).equals(table.select(["s"]))
    # The bytes are a plain Parquet file any reader can open.
    assert pq.read_table(pa.BufferReader(store.read_bytes("t/x.parquet"))).equals(table)


@pytest.mark.parametrize("bad", ["", "/abs", "a//b", "a/../b", "../a", "./a", "a/.hidden", "a\\b", "a/\x00"])
def test_bad_relative_paths_are_refused(store: ObjectStore, bad: str) -> None:
    with pytest.raises(InvalidArgument):
        store.write_bytes(bad, b"x")
    with pytest.raises(InvalidArgument):
        store.read_bytes(bad)


def test_relative_path_check() -> None:
    assert check_rel_path("a/b/") == "a/b"
    assert check_rel_path("", allow_root=True) == ""
    assert check_rel_path("insert_log/1/-1/2") == "insert_log/1/-1/2"


# ---------------------------------------------------------------- local atomic writes


def _local(tmp_path: Path) -> ObjectStore:
    return ObjectStore.from_uri(f"file://{tmp_path}/root")


def test_from_uri_creates_the_local_root(tmp_path: Path) -> None:
    store = ObjectStore.from_uri(f"file://{tmp_path}/deep/new/root")
    assert (tmp_path / "deep/new/root").is_dir()
    assert store.uri == f"file://{tmp_path}/deep/new/root"
    store.write_bytes("f", b"1")
    assert (tmp_path / "deep/new/root/f").read_bytes() == b"1"


def test_successful_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    store = _local(tmp_path)
    store.write_bytes("d/e/f.bin", b"data")
    store.write_parquet("d/e/t.parquet", pa.table({"a": [1]}))
    assert sorted(os.listdir(tmp_path / "root/d/e")) == ["f.bin", "t.parquet"]


def test_failed_write_leaves_no_file_under_the_final_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _local(tmp_path)
    store.write_bytes("d/old.bin", b"old content")

    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:
        raise _Boom()

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(_Boom):
        store.write_bytes("d/new.bin", b"never visible")
    with pytest.raises(_Boom):
        store.write_bytes("d/old.bin", b"replacement")
    monkeypatch.setattr(os, "fsync", real_fsync)

    assert not (tmp_path / "root/d/new.bin").exists()
    assert (tmp_path / "root/d/old.bin").read_bytes() == b"old content"
    assert sorted(os.listdir(tmp_path / "root/d")) == ["old.bin"]  # no temporary left either


def test_failed_parquet_encode_leaves_nothing(store: ObjectStore, monkeypatch: pytest.MonkeyPatch) -> None:
    store.write_bytes("d/keep", b"1")

    def failing_write_table(*args: Any, **kwargs: Any) -> None:
        raise _Boom()

    monkeypatch.setattr(pq, "write_table", failing_write_table)
    with pytest.raises(_Boom):
        store.write_parquet("d/t.parquet", pa.table({"a": [1]}))
    assert not store.exists("d/t.parquet")
    assert [e.path for e in store.list("")] == ["d/keep"]
    if store.uri.startswith("file://"):  # no hidden temporary left behind either
        assert os.listdir(store.full_path("d")) == ["keep"]


def test_list_hides_in_progress_temporaries(tmp_path: Path) -> None:
    store = _local(tmp_path)
    store.write_bytes("d/real", b"1")
    (tmp_path / "root/d/.real.abc123.tmp").write_bytes(b"partial")
    assert [e.path for e in store.list("d")] == ["d/real"]
    store.delete_prefix("d")
    assert not (tmp_path / "root/d").exists()


# ---------------------------------------------------------------- URIs and S3 configuration


@pytest.mark.parametrize(
    "uri",
    [
        "",
        "relative/path",
        "/abs/path",
        "file://host/path",
        "file:relative",
        "file:///a/../b",
        "file:///tmp/x?y=1",
        "s3://",
        "s3:///prefix",
        "s3://bucket/a/../b",
        "s3://user@bucket/p",
        "gs://bucket/p",
        "http://example.com/x",
    ],
)
def test_bad_uris_are_refused(uri: str) -> None:
    with pytest.raises(InvalidArgument, match="storage|URI|uri"):
        ObjectStore.from_uri(uri, env={})


def test_local_root_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(InvalidArgument):
        ObjectStore.from_uri(f"file://{tmp_path}/file")


@pytest.mark.parametrize(
    "env",
    [
        {"AWS_ACCESS_KEY_ID": "only-the-id"},
        {"AWS_ENDPOINT_URL": "ftp://host:21"},
        {"AWS_ENDPOINT_URL": "http://host:9000/path"},
        {"AWS_ENDPOINT_URL": "http://"},
    ],
)
def test_bad_s3_environment_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(InvalidArgument):
        ObjectStore.from_uri("s3://bucket/prefix", env={"AWS_REGION": "us-east-1", **env})


def test_s3_uri_needs_no_network_to_open() -> None:
    store = ObjectStore.from_uri(
        "s3://bucket/some/prefix/",
        env={"AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "minio.local:9000", "AWS_EC2_METADATA_DISABLED": "true"},
    )
    assert store.full_path("a/b") == "bucket/some/prefix/a/b"
    assert store.uri == "s3://bucket/some/prefix/"


def test_s3_endpoint_comes_from_the_environment(s3_env: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ObjectStore.from_uri(f"s3://{s3_env.bucket}/env-check")
    store.write_bytes("k", b"v")
    # The service-specific variable wins over the generic one.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_env.endpoint)
    assert ObjectStore.from_uri(f"s3://{s3_env.bucket}/env-check").read_bytes("k") == b"v"


def test_s3_bucket_root_without_prefix(s3_env: S3Server) -> None:
    store = ObjectStore.from_uri(f"s3://{s3_env.bucket}")
    store.write_bytes("bucket-root-test/obj", b"1")
    assert [e.path for e in store.list("bucket-root-test")] == ["bucket-root-test/obj"]
    store.delete_prefix("bucket-root-test")
    assert store.list("bucket-root-test") == []
