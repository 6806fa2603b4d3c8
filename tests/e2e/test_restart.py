"""Durability: acknowledged writes survive SIGTERM and SIGKILL of the whole standalone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from tests.harness import Standalone, dump_logs_on_failure


def _count(client: MilvusClient, name: str) -> int:
    return client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]


@pytest.mark.timeout(300)
def test_kill9_keeps_exactly_the_acknowledged_writes(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data")
    s.start()
    try:
        client = MilvusClient(s.uri)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=8)
        index = client.prepare_index_params()
        index.add_index("v", metric_type="L2")
        client.create_collection("durable", schema=schema, index_params=index, num_shards=2)
        rng = np.random.default_rng(5)
        vecs = rng.standard_normal((300, 8)).astype(np.float32)
        for start in range(0, 300, 50):
            client.insert("durable", [{"id": i, "v": vecs[i].tolist()} for i in range(start, start + 50)])
        client.delete("durable", ids=list(range(0, 300, 3)))
        expected = sorted(set(range(300)) - set(range(0, 300, 3)))
        client.close()
    finally:
        s.kill()  # SIGKILL of the whole process group, right after the acknowledgements

    s.start()
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            assert client.has_collection("durable")
            client.load_collection("durable", timeout=120)
            got = client.query("durable", filter="id >= 0", output_fields=["id", "v"], consistency_level="Strong")
            assert sorted(r["id"] for r in got) == expected
            for r in got[:20]:
                np.testing.assert_allclose(r["v"], vecs[r["id"]], rtol=1e-6)
            hits = client.search("durable", data=[vecs[1].tolist()], limit=1, consistency_level="Strong")
            assert hits[0][0]["id"] == 1 and hits[0][0]["distance"] == pytest.approx(0.0, abs=1e-5)
            # Writes keep working after recovery, with ids and timestamps that move forward.
            client.insert("durable", [{"id": 1000, "v": vecs[0].tolist()}])
            assert _count(client, "durable") == len(expected) + 1
            client.close()
    finally:
        assert s.stop() == 0  # SIGTERM: clean shutdown, children included

    s.start()
    try:
        client = MilvusClient(s.uri)
        assert _count(client, "durable") == len(expected) + 1
        client.close()
    finally:
        s.stop()
        s.kill()
