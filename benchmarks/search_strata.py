"""The search benchmark's Strata side: one standalone, one fresh collection per index type.

For each index type: create the collection (not loaded), insert in batches,
``flush()``, ``create_index``, ``load_collection`` and wait for ``Loaded``
(the index is built while the segments load), then time searches through
pymilvus at nq=1 and nq=100 with ``consistency_level="Eventually"``, and drop
the collection. ``ingest.Sampler`` samples RSS per role during each index
type's phase; the CPU time each role (and this client) spent in the search
loops is read before and after them.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import psutil
from ingest import ROLES, Sampler, role_of
from pymilvus import DataType, MilvusClient
from pymilvus.client.types import LoadState
from search_data import Dataset, batches, recall, time_requests
from waits import wait_indexed

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness import Standalone  # noqa: E402

MIB = 1 << 20


def role_cpu_seconds(launcher_pid: int) -> dict[str, float]:
    """User + system CPU seconds so far of each role's processes, and of this process (``client``)."""
    out = {r: 0.0 for r in ROLES}
    for child in psutil.Process(launcher_pid).children(recursive=True):
        role = role_of(child)
        if role is None:
            continue
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        out[role] += t.user + t.system
    me = psutil.Process().cpu_times()
    out["client"] = me.user + me.system
    return out


def _search_loop(
    client: MilvusClient, name: str, queries: np.ndarray, nq: int, k: int, params: dict[str, Any], pid: int
) -> tuple[dict[str, Any], list[list[int]]]:
    """Timed searches of ``nq`` queries each; latency summary with CPU per role, and the ids per query."""

    def call(q: np.ndarray) -> list[list[int]]:
        res = client.search(
            name, data=list(q), limit=k, anns_field="v", search_params=params, consistency_level="Eventually"
        )
        return [list(h.ids) for h in res]

    before = role_cpu_seconds(pid)
    timed, results = time_requests(queries, nq, call)
    after = role_cpu_seconds(pid)
    summary: dict[str, Any] = timed.summary()
    # CPU per request, over the timed and the warm-up requests alike.
    requests = len(timed.seconds) + timed.warmup
    summary["cpu_ms_per_request"] = {r: round((after[r] - before[r]) * 1e3 / requests, 3) for r in after}
    return summary, [ids for batch in results for ids in batch]


def _wait_loaded(client: MilvusClient, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while client.get_load_state(name)["state"] != LoadState.Loaded:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} not loaded in {timeout}s")
        time.sleep(0.1)


def _one_index(
    client: MilvusClient,
    name: str,
    index_type: str,
    data: Dataset,
    truth: np.ndarray,
    *,
    m: int,
    ef_construction: int,
    ef: int,
    shards: int,
    batch: int,
    pid: int,
) -> dict[str, Any]:
    rows, dim = data.vectors.shape
    k = truth.shape[1]
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=dim)
    client.create_collection(name, schema=schema, num_shards=shards)  # no index: not loaded yet
    t0 = time.perf_counter()
    for part in batches(rows, batch):
        client.insert(name, [{"id": i, "v": data.vectors[i]} for i in range(part.start, part.stop)])
    t1 = time.perf_counter()
    client.flush(name, timeout=1800)
    t2 = time.perf_counter()
    build = {} if index_type == "FLAT" else {"M": m, "efConstruction": ef_construction}
    index = client.prepare_index_params()
    index.add_index("v", index_type=index_type, metric_type="L2", params=build)
    client.create_index(name, index)
    t3 = time.perf_counter()
    client.load_collection(name, timeout=3600)
    _wait_loaded(client, name, 3600)
    wait_indexed(client, name)
    t4 = time.perf_counter()
    count = client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"]
    if count != rows:
        raise RuntimeError(f"{name}: count(*) is {count} after flush and load, expected {rows}")
    params = {"metric_type": "L2", "params": {"ef": ef}}
    nq1, found = _search_loop(client, name, data.queries, 1, k, params, pid)
    nq100, found100 = _search_loop(client, name, data.queries, 100, k, params, pid)
    # Dropped on success only: after a failure the whole standalone goes, and a drop could mask the error.
    client.drop_collection(name)
    return {
        "count": count,
        "insert_s": round(t1 - t0, 2),
        "flush_s": round(t2 - t1, 2),
        "create_index_s": round(t3 - t2, 2),
        "load_s": round(t4 - t3, 2),
        "searchable_s": round(t4 - t1, 2),
        "nq1": nq1,
        "nq100": nq100,
        "recall": round(recall(found, truth), 4),
        "recall_nq100": round(recall(found100, truth), 4),
    }


def run_strata(
    data: Dataset,
    truth: np.ndarray,
    index_types: list[str],
    *,
    m: int,
    ef_construction: int,
    ef: int,
    shards: int,
    batch: int,
    parent: str | None,
    keep: bool,
) -> dict[str, dict[str, Any]]:
    """Every index type against one standalone in a temporary directory; always stops it."""
    tmp = tempfile.mkdtemp(dir=parent, prefix="strata-search-")
    out: dict[str, dict[str, Any]] = {}
    try:
        standalone = Standalone(Path(tmp) / "data")
        try:
            standalone.start()
            assert standalone.proc is not None
            pid = standalone.proc.pid
            client = MilvusClient(standalone.uri, timeout=600)
            try:
                for index_type in index_types:
                    sampler = Sampler(pid, Path(tmp) / "data" / "wal")
                    sampler.start()
                    try:
                        result = _one_index(
                            client,
                            f"search_{index_type.lower()}",
                            index_type,
                            data,
                            truth,
                            m=m,
                            ef_construction=ef_construction,
                            ef=ef,
                            shards=shards,
                            batch=batch,
                            pid=pid,
                        )
                    finally:
                        sampler.stop_event.set()
                        sampler.join(5)
                    result["peak_rss_mib"] = {r: round(v / MIB, 1) for r, v in sampler.peak_rss.items()}
                    out[index_type] = result
                    print(f"strata {index_type}: {result}", file=sys.stderr, flush=True)
            finally:
                client.close()
        finally:
            try:
                if standalone.proc is not None:
                    standalone.stop()
            except BaseException:
                standalone.kill()  # a second Ctrl-C or a hung shutdown: no process outlives the run
                raise
    finally:
        if keep:
            print(f"data directory kept: {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return out
