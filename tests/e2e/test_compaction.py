"""Compaction through pymilvus against the real standalone (Spark local[*] jobs).

The proof of issue #9: 200k rows in eight segments, 30% of them deleted, then
``compact()``: the segment count drops, the deleted rows are gone from the
Parquet files themselves, and ``count(*)``, queries and (exact, FLAT) searches
equal brute force over the survivors.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from common.schema import CollectionSchema
from common.schema import DataType as SDataType
from common.schema import FieldSchema as SField
from common.storage.objectstore import ObjectStore
from common.storage.segment_io import SegmentReader
from tests.e2e.util import unique_name
from tests.harness import Standalone, dump_logs_on_failure

DIM = 16
ROWS = 200_000
ROUNDS = 4


def wait_compaction(client: MilvusClient, job: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while client.get_compaction_state(job) != "Completed":
        assert time.monotonic() < deadline, f"compaction {job} not completed in {timeout}s"
        time.sleep(0.5)


def live_segments(client: MilvusClient, name: str) -> list[Any]:
    return [s for s in client.list_persistent_segments(name) if s.level == 2]  # L1: rows


def storage_ids(standalone: Standalone, client: MilvusClient, name: str) -> list[int]:
    """Every id stored in the collection's live L1 segments, read from their Parquet files."""
    desc = client.describe_collection(name)
    schema = CollectionSchema(
        name=name,
        fields=tuple(
            SField(field_id=f["field_id"], name=f["name"], dtype=SDataType(int(f["type"])),
                   is_primary=bool(f.get("is_primary")), dim=int(f.get("params", {}).get("dim", 0)))
            for f in desc["fields"]
        ),
    )
    store = ObjectStore.from_uri((standalone.data_dir / "storage").resolve().as_uri())
    reader = SegmentReader(store, schema)
    ids: list[int] = []
    root = standalone.data_dir / "storage" / "manifests" / str(desc["collection_id"])
    for seg in live_segments(client, name):
        [part_dir] = [p for p in root.iterdir() if (p / str(seg.segment_id)).exists()]
        path = reader.latest_manifest_path(desc["collection_id"], int(part_dir.name), seg.segment_id)
        assert path is not None
        ids.extend(reader.read_inserts(reader.read_manifest(path), columns=["id"]).column("id").to_pylist())
    return ids


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_compaction_drops_deleted_rows_physically_and_reads_stay_exact(
    standalone: Standalone, milvus: MilvusClient
) -> None:
    name = unique_name("compact")
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = milvus.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    milvus.create_collection(name, schema=schema, index_params=index, num_shards=2)
    rng = np.random.default_rng(9)
    data = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    with dump_logs_on_failure(standalone):
        per_round = ROWS // ROUNDS
        for r in range(ROUNDS):
            for first in range(r * per_round, (r + 1) * per_round, 10_000):
                milvus.insert(name, [{"id": i, "v": data[i]} for i in range(first, first + 10_000)])
            milvus.flush(name)
        before = live_segments(milvus, name)
        assert len(before) >= 2 * ROUNDS, [s.segment_id for s in before]
        assert milvus.get_collection_stats(name)["row_count"] == ROWS

        result = milvus.delete(name, filter="id % 10 < 3")
        deleted = result["delete_count"] if isinstance(result, dict) else len(result)
        assert deleted == ROWS * 3 // 10
        milvus.flush(name)
        survivors = np.array([i for i in range(ROWS) if i % 10 >= 3])

        started = time.monotonic()
        job = milvus.compact(name)
        wait_compaction(milvus, job)
        seconds = time.monotonic() - started
        after = live_segments(milvus, name)
        assert len(after) < len(before), ([s.segment_id for s in before], [s.segment_id for s in after])
        assert not {s.segment_id for s in after} & {s.segment_id for s in before}
        assert all(s.level != 1 for s in milvus.list_persistent_segments(name)), "L0 deletes were not folded"

        # The deleted rows are gone from the files themselves, and every survivor is there once.
        stored = storage_ids(standalone, milvus, name)
        assert len(stored) == len(survivors) and sorted(stored) == survivors.tolist()

        # Reads switch to the outputs and equal brute force over the survivors.
        deadline = time.monotonic() + 60
        while True:
            count = milvus.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
            if count == len(survivors) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert count == len(survivors)
        assert milvus.get_collection_stats(name)["row_count"] == len(survivors)  # compacted: deletes subtracted
        assert milvus.query(name, filter="id in [0, 1, 2, 10, 199992]", output_fields=["id"],
                            consistency_level="Strong") == []
        queries = rng.standard_normal((20, DIM)).astype(np.float32)
        hits = milvus.search(name, data=queries.tolist(), limit=10, consistency_level="Strong")
        kept = data[survivors]
        dist = ((queries[:, None, :] - kept[None, :, :]) ** 2).sum(-1)
        order = np.argsort(dist, axis=1, kind="stable")[:, :10]
        for q, row in enumerate(hits):
            assert [h["id"] for h in row] == survivors[order[q]].tolist()
            np.testing.assert_allclose([h["distance"] for h in row], dist[q, order[q]], rtol=1e-4, atol=1e-4)
        print(f"compaction of {ROWS} rows ({deleted} deleted), {len(before)} -> {len(after)} segments: "
              f"{seconds:.1f}s")
        milvus.drop_collection(name)


def test_compaction_requests_are_checked(milvus: MilvusClient) -> None:
    from pymilvus import MilvusException

    with pytest.raises(MilvusException, match="not exist|not found"):
        milvus.compact("no_such_collection_here")
    with pytest.raises(MilvusException, match="not found"):
        milvus.get_compaction_state(123456789)
    name = unique_name("compact_empty")
    milvus.create_collection(name, dimension=4)
    try:
        with pytest.raises(MilvusException, match="clustering compaction is not supported"):
            milvus.compact(name, is_clustering=True)
        job = milvus.compact(name)  # nothing to compact: completes at once, with no plan
        wait_compaction(milvus, job, timeout=30)
    finally:
        milvus.drop_collection(name)
