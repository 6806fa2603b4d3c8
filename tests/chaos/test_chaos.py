"""Chaos: a writer with an acknowledged-write oracle while roles, etcd and the disk fail, round after round.

``strata standalone`` runs with its whole data dir on a size-limited tmpfs,
small segments (a seal every 2,000 rows), WAL files truncated every 0.5 s and
automatic compaction every 20 s, while a writer inserts new ids and deletes
some it inserted. Each round applies one fault (the order is shuffled with a
fixed seed, every kind at least once):

* ``kill -9`` of the node process (streaming node, query node, proxy), of the
  coordinator, or of etcd: the launcher starts it again;
* ``kill -9`` of the whole standalone: the test starts it again;
* the disk filled for a few seconds, then freed.

After each fault the test measures how soon a Strong read answers (bounded
by ``READ_BOUND``), pauses the writer and checks the oracle: every
acknowledged insert is there unless a delete of it may have happened, no
acknowledged delete came back, no row is there twice, and nothing is there
that was never sent. Writes that failed or timed out are *maybe* writes:
they may or may not have happened. The roles' whole logs are copied to
``tmp_path/standalone-roles`` at the end, passed or failed (the tmpfs goes).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import numpy as np
import pytest
from pymilvus import DataType, MilvusClient, MilvusException

from tests.harness import Standalone, dump_logs_on_failure
from tests.tmpfs import fill, tmpfs

pytestmark = [pytest.mark.chaos, pytest.mark.needs_root]

DIM = 8
BATCH = 100
NAME = "chaos"
READ_BOUND = 60.0  # seconds from a fault (or the disk freed) to a Strong read that answers
WINDOW = 16_384
ENV = {
    "STRATA_STREAMINGNODE_SEGMENT_MAX_ROWS": "2000",
    "STRATA_STREAMINGNODE_WAL_SEGMENT_BYTES": str(256 << 10),
    "STRATA_STREAMINGNODE_TRUNCATE_INTERVAL_SECONDS": "0.5",
    "STRATA_JOBS_COMPACTION_INTERVAL_SECONDS": "20",
    "STRATA_JOBS_COMPACTION_MIN_AGE_SECONDS": "5",
    "STRATA_JOBS_COMPACTION_MIN_SEGMENTS": "4",
}
FAULTS = ("kill_node", "kill_coordinator", "kill_etcd", "kill_all", "fill_disk")


@dataclass
class Oracle:
    """What the writer knows: acknowledged and maybe-applied inserts and deletes."""

    inserted: set[int] = field(default_factory=set)
    maybe_inserted: set[int] = field(default_factory=set)
    deleted: set[int] = field(default_factory=set)
    maybe_deleted: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, present: list[int]) -> None:
        ids = set(present)
        with self.lock:
            assert len(ids) == len(present), f"{len(present) - len(ids)} rows are there twice"
            lost = self.inserted - self.deleted - self.maybe_deleted - ids
            assert not lost, f"{len(lost)} acknowledged rows are missing, e.g. {sorted(lost)[:5]}"
            back = self.deleted & ids
            assert not back, f"{len(back)} deleted rows came back, e.g. {sorted(back)[:5]}"
            unknown = ids - self.inserted - self.maybe_inserted
            assert not unknown, f"{len(unknown)} rows were never inserted, e.g. {sorted(unknown)[:5]}"


class Writer(threading.Thread):
    """Inserts batches of new ids; every fifth batch deletes a few acknowledged ones."""

    def __init__(self, uri: str, oracle: Oracle) -> None:
        super().__init__(daemon=True)
        self.uri = uri
        self.oracle = oracle
        self.next_id = 0
        self.rng = random.Random(7)
        self.vectors = np.random.default_rng(7)
        self.running = threading.Event()
        self.idle = threading.Event()
        self.halt = threading.Event()
        self.errors = 0

    def run(self) -> None:
        client: MilvusClient | None = None
        batch_no = 0
        while not self.halt.is_set():
            if not self.running.is_set():
                self.idle.set()
                self.running.wait(0.2)
                continue
            self.idle.clear()
            try:
                if client is None:
                    client = MilvusClient(self.uri, timeout=10)
                batch_no += 1
                if batch_no % 5 == 0:
                    self._delete_some(client)
                else:
                    self._insert_batch(client)
            except Exception:  # down, restarting or full: what was sent is a maybe
                self.errors += 1
                client = None
                time.sleep(0.2)
            time.sleep(0.05)

    def _insert_batch(self, client: MilvusClient) -> None:
        ids = list(range(self.next_id, self.next_id + BATCH))
        self.next_id += BATCH
        with self.oracle.lock:
            self.oracle.maybe_inserted.update(ids)
        vecs = self.vectors.standard_normal((BATCH, DIM)).astype(np.float32)
        client.insert(NAME, [{"id": i, "v": v.tolist()} for i, v in zip(ids, vecs, strict=True)], timeout=10)
        with self.oracle.lock:
            self.oracle.inserted.update(ids)

    def _delete_some(self, client: MilvusClient) -> None:
        with self.oracle.lock:
            live = sorted(self.oracle.inserted - self.oracle.deleted - self.oracle.maybe_deleted)
        if len(live) < 50:
            return
        ids = self.rng.sample(live, 20)
        with self.oracle.lock:
            self.oracle.maybe_deleted.update(ids)
        client.delete(NAME, ids=ids, timeout=10)
        with self.oracle.lock:
            self.oracle.deleted.update(ids)
            self.oracle.maybe_deleted.difference_update(ids)

    def pause(self) -> None:
        self.running.clear()
        assert self.idle.wait(60), "the writer did not pause"

    def resume(self) -> None:
        self.running.set()


def _readable(uri: str, since: float) -> float:
    """Seconds from ``since`` until a Strong count answers (fails past ``READ_BOUND``)."""
    client: MilvusClient | None = None
    while True:
        try:
            if client is None:
                client = MilvusClient(uri, timeout=10)
            client.query(NAME, filter="", output_fields=["count(*)"], consistency_level="Strong", timeout=10)
            client.close()
            return time.monotonic() - since
        except (MilvusException, grpc.RpcError) as err:
            client = None
            assert time.monotonic() - since < READ_BOUND, f"reads unavailable {READ_BOUND}s after the fault: {err}"
            time.sleep(0.5)


def _present(uri: str, upto: int) -> list[int]:
    client = MilvusClient(uri, timeout=60)
    out: list[int] = []
    for low in range(0, upto, WINDOW):
        rows = client.query(NAME, filter=f"id >= {low} and id < {low + WINDOW}", output_fields=["id"],
                            limit=WINDOW, consistency_level="Strong", timeout=60)
        out += [r["id"] for r in rows]
    client.close()
    return out


def _fault(kind: str, s: Standalone, disk: Path) -> float:
    """Apply one fault; returns the moment from which reads are timed."""
    match kind:
        case "kill_node" | "kill_coordinator" | "kill_etcd":
            role = {"kill_node": "standalone-node", "kill_coordinator": "coordinator", "kill_etcd": "etcd"}[kind]
            os.kill(s.children()[role], signal.SIGKILL)
            return time.monotonic()
        case "kill_all":
            s.kill()
            s.start(timeout=120)
            return time.monotonic()
        case "fill_disk":
            filler = fill(disk)
            time.sleep(4)  # writes fail meanwhile (disk quota), etcd may stop at its next commit
            filler.unlink()
            return time.monotonic()
        case _:
            raise AssertionError(kind)


@pytest.mark.timeout(900)
def test_nothing_acknowledged_is_lost_and_reads_come_back_through_rounds_of_faults(tmp_path: Path) -> None:
    kinds = [*FAULTS, *random.Random(25).choices(FAULTS, k=3)]
    random.Random(25).shuffle(kinds)
    oracle = Oracle()
    with tmpfs(tmp_path / "disk", "512m") as disk:
        s = Standalone(disk / "data", env=ENV, log_path=tmp_path / "standalone.log")
        s.start()
        writer = Writer(s.uri, oracle)
        try:
            with dump_logs_on_failure(s):
                client = MilvusClient(s.uri, timeout=30)
                schema = MilvusClient.create_schema(auto_id=False)
                schema.add_field("id", DataType.INT64, is_primary=True)
                schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
                index = client.prepare_index_params()
                index.add_index("v", index_type="HNSW", metric_type="L2", params={"M": 8, "efConstruction": 32})
                client.create_collection(NAME, schema=schema, index_params=index, num_shards=2)
                client.close()
                writer.start()
                writer.resume()
                time.sleep(10)
                timings = []
                for round_, kind in enumerate(kinds, 1):
                    since = _fault(kind, s, disk)
                    took = _readable(s.uri, since)
                    time.sleep(3)  # the writer works on the recovered server
                    writer.pause()
                    oracle.check(_present(s.uri, writer.next_id))
                    timings.append((kind, round(took, 1)))
                    print(f"round {round_}: {kind}: reads after {took:.1f} s; {len(oracle.inserted)} rows "
                          f"acknowledged, {len(oracle.deleted)} deleted, {writer.errors} failed writes", flush=True)
                    writer.resume()
                    time.sleep(5)
                assert len(oracle.inserted) > 10_000 and oracle.deleted
                coordinator_log = (disk / "data" / "logs" / "coordinator.log").read_text()
                print(f"reads came back after: {timings}; compaction jobs started: "
                      f"{coordinator_log.count('compaction started')}")
        finally:
            writer.halt.set()
            writer.join(30)
            s.kill()
            s.keep_logs()  # the roles' logs outlive the tmpfs, in tmp_path (pytest keeps the last runs')
