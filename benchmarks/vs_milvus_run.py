"""One index type on one server through pymilvus: load, build, sweep, time. The same calls for every server.

1. Create a collection (int64 ``id``, vector ``v``, one shard) without an
   index, insert the rows in batches of ``batch``, ``flush``.
2. *build s*: from ``create_index`` until ``load_collection`` has loaded the
   collection and ``describe_index`` says ``Finished``. Both servers build
   when asked (Milvus on its index node, Strata on a query node its
   coordinator picks) and ``create_index`` waits for it (pymilvus polls
   ``describe_index``); loading then reads the built index. Every call is the
   same for both. ``create_index_s`` in the JSON is the ``create_index`` call
   alone.
3. Sweep the index's search parameter over every query at nq=100 and keep the
   smallest value whose recall@10 reaches ``target`` (none: the best value,
   and the row says so).
4. At that value: nq=1, ``nq1_requests`` requests one after another; nq=100,
   every query ``passes`` times over (QPS over the sum of the requests).
5. *peak RSS*: the largest sum over the server's process tree, sampled every
   0.5 s from the collection's creation to its drop (the server's idle
   footprint included).

Searches are ``Eventually`` consistent, the client's objects frozen out of
the garbage collector (``compare_measure.frozen_gc``), 3 untimed requests
before each loop.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from compare_measure import frozen_gc, sequential
from compare_servers import MIB, Server
from pymilvus import DataType, MilvusClient
from pymilvus.client.types import LoadState
from search_data import batches
from vs_milvus_cases import IndexCase, K, Workload
from waits import wait_indexed

COLLECTION = "vs_milvus"
VECTOR = "v"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    target: float = 0.95
    nq1_requests: int = 200
    passes: int = 3
    batch: int = 1000
    build_timeout: float = 900.0  # Milvus retries a build that fails and reports it InProgress meanwhile

    def validate(self) -> None:
        if not 0 < self.target <= 1 or min(self.nq1_requests, self.passes, self.batch) < 1:
            raise ValueError("target in (0, 1]; requests, passes and batch >= 1")


def run_index(
    server: Server,
    data: Workload,
    case: IndexCase,
    opts: RunOptions,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Every step above on ``server``; the figures as a JSON-ready dict. The collection is dropped after."""
    client = MilvusClient(server.uri, timeout=3600, dedicated=True)
    server.sampler.reset()
    try:
        out = _load(client, data, case, opts)
        log(f"{server.name} {data.name} {case.index_type}: inserted in {out['insert_s']}s, built in {out['build_s']}s")
        with frozen_gc():
            out.update(_search(client, data, case, opts))
        log(f"{server.name} {data.name} {case.index_type}: {case.search_params(out['param'])} recall "
            f"{out['recall']} nq=1 {out['nq1']['qps']} QPS, nq=100 {out['nq100']['qps']} QPS")  # fmt: skip
    finally:
        with contextlib.suppress(Exception):  # also after a failure: the next index starts on an empty server
            client.release_collection(COLLECTION)
            client.drop_collection(COLLECTION)
        client.close()
    server.sampler.sample()
    out["peak_rss_mib"] = round(server.sampler.peak_total / MIB, 1)
    return out


def _load(
    client: MilvusClient, data: Workload, case: IndexCase, opts: RunOptions
) -> dict[str, Any]:
    if client.has_collection(COLLECTION):
        client.drop_collection(COLLECTION)
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field(VECTOR, DataType.BINARY_VECTOR if data.binary else DataType.FLOAT_VECTOR, dim=data.dim)
    client.create_collection(COLLECTION, schema=schema, num_shards=1)
    inserting = 0.0
    with frozen_gc():
        for part in batches(data.rows, opts.batch):
            rows = [{"id": i, VECTOR: data.row(i)} for i in range(part.start, part.stop)]
            t = time.perf_counter()
            client.insert(COLLECTION, rows)
            inserting += time.perf_counter() - t
    t0 = time.perf_counter()
    client.flush(COLLECTION, timeout=3600)
    t1 = time.perf_counter()
    index = client.prepare_index_params()
    index.add_index(VECTOR, index_type=case.index_type, metric_type=data.metric, params=case.build)
    client.create_index(COLLECTION, index, timeout=opts.build_timeout)  # waits for Finished
    t2 = time.perf_counter()
    client.load_collection(COLLECTION, timeout=opts.build_timeout)
    while client.get_load_state(COLLECTION)["state"] != LoadState.Loaded:
        if time.perf_counter() - t2 > opts.build_timeout:
            raise TimeoutError(f"collection not loaded in {opts.build_timeout:.0f}s")
        time.sleep(0.1)
    wait_indexed(client, COLLECTION, opts.build_timeout)
    t3 = time.perf_counter()
    return {
        "insert_s": round(inserting, 2),
        "flush_s": round(t1 - t0, 2),
        "create_index_s": round(t2 - t1, 2),
        "build_s": round(t3 - t1, 2),
    }


def _search(client: MilvusClient, data: Workload, case: IndexCase, opts: RunOptions) -> dict[str, Any]:
    def at(value: int | None) -> Callable[[np.ndarray], list[list[int]]]:
        params = {"metric_type": data.metric, "params": case.search_params(value)}

        def call(q: np.ndarray) -> list[list[int]]:
            res = client.search(COLLECTION, data=data.query_batch(q), limit=K, anns_field=VECTOR,
                                search_params=params, consistency_level="Eventually")  # fmt: skip
            return [list(hits.ids) for hits in res]

        return call

    sweep: list[dict[str, Any]] = []
    chosen: int | None = None
    for value in case.values or (None,):
        s, found = sequential(at(value), data.queries, 100)
        r = round(data.recall(found), 4)
        sweep.append({"value": value, "recall": r, "qps": s["qps"]})
        chosen = value
        if r >= opts.target:
            break
    else:
        if case.values:
            chosen = max(sweep, key=lambda p: p["recall"])["value"]
    nq1, _ = sequential(at(chosen), data.queries[: opts.nq1_requests], 1)
    nq100, found = sequential(at(chosen), data.queries, 100, opts.passes)
    recall = round(data.recall(found), 4)
    return {
        "param": chosen,
        "recall": recall,
        "reached": recall >= opts.target,
        "sweep": sweep,
        "nq1": nq1,
        "nq100": nq100,
    }
