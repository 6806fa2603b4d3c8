"""Recovery converges under load: after ``kill -9`` with a writer running, reads come back.

The collection's rows are in many small sealed segments (a segment seals every 2,000 rows) and the
restarted node takes a second to load each (a ``sleep`` failpoint, as a big segment would), while
a writer keeps inserting: segments keep flushing and the WAL keeps being truncated (small WAL files,
truncated every 0.5 s) during the whole load. The delegator must come out of its load caught up,
never having lost its place in the WAL, and every acknowledged row must be there exactly once.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc
import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure

DIM = 8
BATCH = 200
SMALL_SEGMENTS = {
    "STRATA_STREAMINGNODE_SEGMENT_MAX_ROWS": "2000",
    "STRATA_STREAMINGNODE_WAL_SEGMENT_BYTES": str(128 << 10),
    "STRATA_STREAMINGNODE_TRUNCATE_INTERVAL_SECONDS": "0.5",
}
SLOW_LOAD_SECONDS = 1.0
# The load itself takes SLOW_LOAD_SECONDS per initial segment; what it may add on a loaded 2-core machine.
SLACK_SECONDS = 60.0


class Writer(threading.Thread):
    """Inserts batches of new ids until stopped; remembers which were acknowledged."""

    def __init__(self, uri: str, start_id: int) -> None:
        super().__init__(daemon=True)
        self.uri = uri
        self.next_id = start_id
        self.acked: set[int] = set()
        self.failed = 0
        self.halt = threading.Event()
        self.rng = np.random.default_rng(3)

    def run(self) -> None:
        client: MilvusClient | None = None
        while not self.halt.is_set():
            ids = list(range(self.next_id, self.next_id + BATCH))
            self.next_id += BATCH  # an id that may have been written unacknowledged is never reused
            vecs = self.rng.standard_normal((BATCH, DIM)).astype(np.float32)
            try:
                if client is None:
                    client = MilvusClient(self.uri, timeout=5)
                client.insert("busy", [{"id": i, "v": v.tolist()} for i, v in zip(ids, vecs, strict=True)], timeout=5)
                self.acked.update(ids)
            except Exception:  # the server is down or restarting: try again with the next ids
                self.failed += 1
                client = None
                time.sleep(0.2)
            time.sleep(0.05)


def _ids(client: MilvusClient, upto: int) -> list[int]:
    out: list[int] = []
    for low in range(0, upto, 10_000):
        rows = client.query("busy", filter=f"id >= {low} and id < {low + 10_000}", output_fields=["id"],
                            limit=16_384, consistency_level="Strong", timeout=60)
        out += [r["id"] for r in rows]
    return out


@pytest.mark.timeout(400)
def test_reads_come_back_after_kill9_while_a_writer_runs_and_the_wal_is_truncated(tmp_path: Path) -> None:
    s = Standalone(tmp_path / "data", env=SMALL_SEGMENTS)
    s.start()
    writer = Writer(s.uri, 0)
    try:
        with dump_logs_on_failure(s):
            client = MilvusClient(s.uri)
            schema = MilvusClient.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
            index = client.prepare_index_params()
            index.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 8, "efConstruction": 32})
            client.create_collection("busy", schema=schema, index_params=index, num_shards=1)
            writer.start()
            while len(writer.acked) < 16_000:  # eight sealed segments and more
                assert writer.is_alive()
                time.sleep(0.2)
            client.close()
    finally:
        s.kill()  # SIGKILL of the whole group while the writer writes

    acked_before = len(writer.acked)
    slow = Standalone(tmp_path / "data", port=s.port,
                      env={**SMALL_SEGMENTS, "STRATA_FAILPOINTS": f"delegator.read_keys=sleep:{SLOW_LOAD_SECONDS}"})
    slow.start()
    try:
        with dump_logs_on_failure(slow):
            restarted = time.monotonic()
            client = MilvusClient(slow.uri)
            count = -1
            while time.monotonic() - restarted < SLACK_SECONDS + SLOW_LOAD_SECONDS * acked_before / 2000:
                try:
                    got = client.query("busy", filter="", output_fields=["count(*)"], consistency_level="Strong",
                                       timeout=10)
                    count = int(got[0]["count(*)"])
                    break
                except (MilvusException, grpc.RpcError):  # not loaded yet, or the read timed out
                    time.sleep(0.5)
            available = time.monotonic() - restarted
            print(f"reads available {available:.1f} s after the restart; {acked_before} rows acknowledged before")
            assert count >= acked_before, f"reads not available {available:.0f} s after the restart"
            time.sleep(3)  # the writer keeps going on the restarted node
            writer.halt.set()
            writer.join(30)
            assert len(writer.acked) > acked_before, "no write was acknowledged after the restart"
            ids = _ids(client, writer.next_id)
            assert len(ids) == len(set(ids)), "a row is there twice"
            assert writer.acked <= set(ids), f"{len(writer.acked - set(ids))} acknowledged rows are missing"
            node_log = (tmp_path / "data" / "logs" / "standalone-node.log").read_text()
            assert "resume position truncated" not in node_log
            client.close()
    finally:
        writer.halt.set()
        slow.stop()
