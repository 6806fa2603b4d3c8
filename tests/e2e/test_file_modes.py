"""Everything a standalone keeps under its data directory is private to its user: directories 0700
(etcd's data directory exactly 0700), files without group or other permissions."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name
from tests.harness import Standalone


def _loose(root: Path) -> list[str]:
    """Paths under ``root`` (itself included) that a group or others may read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:  # removed while we walked (a WAL segment, a job file)
            continue
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {stat.filemode(mode)}")
    return found


def test_data_files_and_directories_are_private(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name("modes")
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("j", DataType.JSON)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = milvus.prepare_index_params()
    params.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 8, "efConstruction": 32})
    milvus.create_collection(name, schema=schema, index_params=params)
    try:
        milvus.insert(name, [{"id": i, "j": {"k": i}, "v": [float(i), 1.0, 0.0, 0.0], "x": i} for i in range(300)])
        milvus.flush(name)  # segments, their stats and index files land in the storage directory
        got = milvus.query(name, filter="id >= 0", output_fields=["id"], consistency_level="Strong", limit=1000)
        assert len(got) == 300
        data = standalone.data_dir
        assert {p.name for p in data.iterdir()} >= {"etcd", "logs", "wal", "storage"}
        assert any(p.is_file() for p in (data / "storage").rglob("*")), "nothing was flushed"
        assert stat.S_IMODE((data / "etcd").stat().st_mode) == 0o700
        assert _loose(data) == []
    finally:
        milvus.drop_collection(name)


def test_a_data_directory_made_loose_is_tightened_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "etcd").mkdir(parents=True, mode=0o755)
    os.chmod(data, 0o755)
    os.chmod(data / "etcd", 0o755)
    s = Standalone(data)
    s.start()
    try:
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        assert stat.S_IMODE((data / "etcd").stat().st_mode) == 0o700
    finally:
        try:
            s.stop()
        finally:
            s.kill()
