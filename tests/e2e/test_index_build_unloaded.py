"""``create_index`` on flushed segments of a collection that is not loaded returns once they are built.

The flow of pymilvus' ``orm/hello_milvus.py``: insert, flush, create an index
(pymilvus waits until ``describe_index`` says Finished), then load and search.
Segments of 1,024 rows or more need a built index to count as indexed; the
coordinator has a query node build them without the collection being loaded
(as Milvus' index coordinator does), so ``create_index`` returns. The load then
restores the saved indexes: no worker builds them a second time.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from tests.harness import Standalone, dump_logs_on_failure

DIM, HALF = 16, 1500
BUILT = r"event='index built'.*index_type='IVF_FLAT'"  # a worker's log line of each build


def _node_logs(s: Standalone) -> str:
    return "\n".join(f.read_text(errors="replace") for f in sorted((s.data_dir / "logs").glob("*.log")))


@pytest.mark.timeout(240)
def test_create_index_builds_flushed_segments_without_a_load(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
            client.create_collection("unloaded", schema=schema, num_shards=1)
            vecs = np.random.default_rng(26).standard_normal((2 * HALF, DIM)).astype(np.float32)
            for start in (0, HALF):  # two flushed segments of 1,500 rows: each needs a build
                client.insert("unloaded", [{"id": i, "v": vecs[i].tolist()} for i in range(start, start + HALF)])
                client.flush("unloaded")
            index = client.prepare_index_params()
            index.add_index("v", index_type="IVF_FLAT", metric_type="L2", params={"nlist": 32})
            # Waits for Finished (raises after the timeout); before the index builds it never returned.
            client.create_index("unloaded", index, timeout=90)
            desc = client.describe_index("unloaded", "v")
            assert desc["state"] == "Finished", desc
            assert desc["indexed_rows"] == desc["total_rows"] == 2 * HALF and desc["pending_index_rows"] == 0, desc
            assert client.get_load_state("unloaded")["state"].name == "NotLoad"
            built = re.findall(BUILT, _node_logs(s))
            assert len(built) == 2, built

            client.load_collection("unloaded", timeout=60)
            for i in (7, 2 * HALF - 3):
                hits = client.search("unloaded", data=[vecs[i].tolist()], limit=1, search_params={"nprobe": 32},
                                     consistency_level="Strong")
                assert hits[0][0]["id"] == i
            logs = _node_logs(s)
            loads = re.findall(r"event='segment loaded'.*", logs)
            assert len(loads) == 2 and all("building=[]" in line and "indexes=['v']" in line for line in loads), loads
            assert len(re.findall(BUILT, logs)) == 2  # restored, not built again
            client.close()
    finally:
        s.stop()
