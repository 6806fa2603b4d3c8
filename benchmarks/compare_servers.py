"""The two servers on loopback, their memory, and the one pymilvus load phase both go through.

``strata()`` and ``milvus_lite()`` are context managers that yield a running
``Server`` and stop it however the block ends (SIGTERM, then SIGKILL of the
whole process group, as ``tests.harness.Standalone`` does for Strata).
milvus-lite runs as ``python -m milvus_lite server --host 127.0.0.1`` (the
``milvus-lite server`` command) in its own session, like the differential
test's peer; its server would otherwise bind every interface. An ``RssSampler``
thread reads the resident set of every process of a server's tree every 0.5 s
and keeps the peak per role.

``load()`` is the load phase, the same calls for both servers: create the
collection (int64 ``id``, int64 ``tag``, float vector ``v``), insert in
batches, then flush, ``compact`` until completed, ``create_index`` (HNSW, L2)
and ``load_collection`` until loaded: *time to searchable*.

The compaction is what a user does after a bulk load, and what the server
would do by itself later: Strata seals growing segments at 128 MiB and merges
small ones up to 1 GiB, so without it 100k x 384 floats in one shard are
searched as two graphs (86k + 14k) until automatic compaction runs.
milvus-lite answers ``compact`` with a job that is already completed.
``--no-compact`` leaves it out.

The inserts run with this process's objects frozen out of the garbage
collector, as the search loops do (``compare_measure``): a full collection
stalls this client 20-30 ms about every half second, a few times in each
system's 2-4 s of inserts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from compare_data import CompareSet
from compare_measure import frozen_gc
from compare_targets import COLLECTION, VECTOR
from ingest import role_of
from pymilvus import DataType, MilvusClient
from pymilvus.client.types import LoadState
from search_data import batches
from waits import wait_indexed

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import Standalone, free_port  # noqa: E402

HOST = "127.0.0.1"
MIB = 1 << 20


class RssSampler(threading.Thread):
    """Peak RSS per role of a process tree (the root and its descendants), every ``interval`` s."""

    def __init__(self, root_pid: int, role_of: Callable[[psutil.Process], str], interval: float = 0.5) -> None:
        super().__init__(daemon=True, name="rss-sampler")
        self.root = psutil.Process(root_pid)
        self.role_of = role_of
        self.interval = interval
        self.peak: dict[str, int] = {}
        self.peak_total = 0  # the largest sum over the tree at one sample (<= the sum of the per-role peaks)
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def sample(self) -> None:
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return
        now: dict[str, int] = {}
        for p in procs:
            try:
                role, rss = self.role_of(p), p.memory_info().rss
            except psutil.Error:
                continue
            now[role] = now.get(role, 0) + rss
        for role, rss in now.items():
            self.peak[role] = max(self.peak.get(role, 0), rss)
        self.peak_total = max(self.peak_total, sum(now.values()))

    def reset(self) -> None:
        """Start the peaks over from the next sample (one phase of a run after another)."""
        self.peak = {}
        self.peak_total = 0

    def stop(self) -> dict[str, float]:
        """Stop sampling (one last sample first); the peaks in MiB."""
        self.sample()
        self._stop_event.set()
        self.join(5)
        return {role: round(rss / MIB, 1) for role, rss in sorted(self.peak.items())}


def _strata_role(proc: psutil.Process) -> str:
    cmd = " ".join(proc.cmdline())
    if "launch.cli" not in cmd:
        if "etcd" in cmd:
            return "etcd"
        if "java" in proc.name() or "pyspark" in cmd or "jobs/main.py" in cmd:
            return "spark"  # a Spark job the coordinator runs (compaction): the JVM, its Python driver and workers
        return "other"
    return role_of(proc) or "launcher"


@dataclass(slots=True, kw_only=True)
class Server:
    name: str
    uri: str
    sampler: RssSampler
    log_path: Path
    peak_rss_mib: dict[str, float] = field(default_factory=dict)


@contextlib.contextmanager
def strata(workdir: Path, repo: Path | None = None, name: str = "Strata") -> Iterator[Server]:
    """``strata standalone`` (etcd and every role as processes) on a free loopback port; ``repo``: the
    checkout whose code runs (default this one), ``name``: the server's name in reports."""
    # Operations ports of its own: two standalones (a ``--baseline`` beside this checkout) cannot share 9091/9092.
    env = {"STRATA_STREAMINGNODE_METRICS_PORT": str(free_port()), "STRATA_COORDINATOR_METRICS_PORT": str(free_port())}
    standalone = Standalone(workdir / "strata", env=env) if repo is None else Standalone(workdir / "strata", env=env,
                                                                                          repo=repo)
    try:
        standalone.start()
        assert standalone.proc is not None
        sampler = RssSampler(standalone.proc.pid, _strata_role)
        sampler.start()
        server = Server(name=name, uri=standalone.uri, sampler=sampler, log_path=standalone.log_path)
        try:
            yield server
        finally:
            server.peak_rss_mib = sampler.stop()
    finally:
        try:
            if standalone.proc is not None:
                standalone.stop()
        except BaseException:
            standalone.kill()  # a second Ctrl-C or a hung shutdown: no process outlives the run
            raise
        finally:
            standalone.kill()  # the group: nothing is left even after a clean stop


@contextlib.contextmanager
def milvus_lite(workdir: Path, timeout: float = 60.0) -> Iterator[Server]:
    """``milvus-lite server`` in its own session on a free loopback port."""
    port = free_port()
    log_path = workdir / "milvus-lite.log"
    workdir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "milvus_lite", "server",
             "--data-dir", str(workdir / "milvus-lite"), "--host", HOST, "--port", str(port)],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        uri = f"http://{HOST}:{port}"
        _wait_answering(proc, uri, log_path, timeout)
        sampler = RssSampler(proc.pid, lambda p: "server")
        sampler.start()
        server = Server(name="milvus-lite", uri=uri, sampler=sampler, log_path=log_path)
        try:
            yield server
        finally:
            server.peak_rss_mib = sampler.stop()
    finally:
        stop_group(proc)


def _wait_answering(proc: subprocess.Popen[bytes], uri: str, log_path: Path, timeout: float) -> None:
    """Until pymilvus connects and lists collections; raises if the server exits or is not ready in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"milvus-lite exited with {proc.returncode}:\n{tail(log_path)}")
        try:
            client = MilvusClient(uri, timeout=1.0, dedicated=True)
        except Exception:  # not listening yet: any connect error means "try again"
            time.sleep(0.2)
            continue
        try:
            client.list_collections(timeout=1.0)
            return
        except Exception:
            time.sleep(0.2)
        finally:
            client.close()
    raise TimeoutError(f"milvus-lite not ready in {timeout}s:\n{tail(log_path)}")


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 15.0) -> None:
    """SIGTERM the process group and wait; then SIGKILL it, so no member outlives the benchmark."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _compact(client: MilvusClient, log: Callable[[str], None], timeout: float = 3600.0) -> None:
    """``compact()`` with the server's default target size, and wait until the job completes."""
    t = time.perf_counter()
    job = client.compact(COLLECTION)
    while (state := client.get_compaction_state(job)) != "Completed":
        if time.perf_counter() - t > timeout:
            raise TimeoutError(f"compaction {job} still {state} after {timeout:.0f}s")
        time.sleep(0.2)
    log(f"compaction {job} completed in {time.perf_counter() - t:.1f}s")


def tail(path: Path) -> str:
    return path.read_text(errors="replace")[-3000:] if path.exists() else ""


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexOptions:
    m: int = 16
    ef_construction: int = 200
    shards: int = 1  # create_collection's default, in Milvus and in Strata
    batch: int = 1000
    compact: bool = True  # compact() after the flush, before the index (see the module docstring)

    def validate(self) -> None:
        if min(self.m, self.ef_construction, self.shards, self.batch) < 1:
            raise ValueError("M, efConstruction, shards and batch must be >= 1")


def load(uri: str, data: CompareSet, opts: IndexOptions, log: Callable[[str], None]) -> dict[str, Any]:
    """Create, insert, flush, index and load the collection; checks ``count(*)``. Timings in seconds."""
    client = MilvusClient(uri, timeout=3600, dedicated=True)
    try:
        if client.has_collection(COLLECTION):
            client.drop_collection(COLLECTION)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("tag", DataType.INT64)
        schema.add_field(VECTOR, DataType.FLOAT_VECTOR, dim=data.dim)
        client.create_collection(COLLECTION, schema=schema, num_shards=opts.shards)  # no index: not loaded
        # Only the insert calls are timed: the row dicts are the benchmark's own work, built between them.
        inserting = 0.0
        with frozen_gc():  # see the module docstring
            for part in batches(data.rows, opts.batch):
                rows = [
                    {"id": i, "tag": int(data.tags[i]), VECTOR: data.vectors[i]} for i in range(part.start, part.stop)
                ]
                t = time.perf_counter()
                client.insert(COLLECTION, rows)
                inserting += time.perf_counter() - t
        t1 = time.perf_counter()
        log(f"inserted {data.rows:,} rows in {inserting:.1f}s of insert calls")
        client.flush(COLLECTION, timeout=3600)
        t_flush = time.perf_counter()
        if opts.compact:
            _compact(client, log)
        t2 = time.perf_counter()
        index = client.prepare_index_params()
        index.add_index(
            VECTOR, index_type="HNSW", metric_type="L2", params={"M": opts.m, "efConstruction": opts.ef_construction}
        )
        client.create_index(COLLECTION, index)
        t3 = time.perf_counter()
        client.load_collection(COLLECTION, timeout=3600)
        while client.get_load_state(COLLECTION)["state"] != LoadState.Loaded:
            if time.perf_counter() - t3 > 3600:
                raise TimeoutError("collection not loaded in an hour")
            time.sleep(0.1)
        wait_indexed(client, COLLECTION)  # loaded and indexed, as before builds moved to the background
        t4 = time.perf_counter()
        count = client.query(COLLECTION, filter="", output_fields=["count(*)"], consistency_level="Strong")[0][
            "count(*)"
        ]
        if count != data.rows:
            raise RuntimeError(f"count(*) is {count} after flush and load, expected {data.rows}")
    finally:
        client.close()
    return {
        "insert_s": round(inserting, 2),
        "insert_rows_per_s": round(data.rows / inserting),
        "flush_s": round(t_flush - t1, 2),
        "compact_s": round(t2 - t_flush, 2),
        "create_index_s": round(t3 - t2, 2),
        "load_s": round(t4 - t3, 2),
        "searchable_s": round(t4 - t1, 2),
    }
