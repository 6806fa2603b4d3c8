"""A sealed segment is served before its HNSW index is built, and describe_index says so.

The standalone's query node takes 8 s more for every index build (a ``sleep``
failpoint, as a big segment would): ``load_collection`` returns and searches
answer (exactly: the segment is searched without its index meanwhile) while
``describe_index`` reports the build InProgress with the rows still pending;
then Finished with every row indexed.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from tests.harness import Standalone, dump_logs_on_failure

ROWS, DIM = 2000, 16


@pytest.mark.timeout(180)
def test_a_segment_is_served_while_its_index_builds(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data", env={"STRATA_FAILPOINTS": "worker.build_index=sleep:8"})
    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
            index = client.prepare_index_params()
            index.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 8, "efConstruction": 32})
            client.create_collection("built", schema=schema, index_params=index, num_shards=1)
            vecs = np.random.default_rng(4).standard_normal((ROWS, DIM)).astype(np.float32)
            client.insert("built", [{"id": i, "v": vecs[i].tolist()} for i in range(ROWS)])
            client.flush("built")
            client.release_collection("built")
            began = time.monotonic()
            client.load_collection("built", timeout=60)
            desc = client.describe_index("built", "v")
            assert desc["state"] == "InProgress" and desc["pending_index_rows"] == ROWS, desc
            hits = client.search("built", data=[vecs[123].tolist()], limit=1, consistency_level="Strong")
            assert hits[0][0]["id"] == 123 and time.monotonic() - began < 8
            while (desc := client.describe_index("built", "v"))["state"] != "Finished":
                assert time.monotonic() - began < 90, f"the index was not built: {desc}"
                time.sleep(0.5)
            assert desc["indexed_rows"] == desc["total_rows"] == ROWS and desc["pending_index_rows"] == 0
            hits = client.search("built", data=[vecs[7].tolist()], limit=1, consistency_level="Strong")
            assert hits[0][0]["id"] == 7
            client.close()
    finally:
        s.stop()
