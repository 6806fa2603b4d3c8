"""The timed loops every system runs, through the ``Target`` interface, and their summaries.

Order (one client unless said): nq=1 one request after another; nq=1 from
``clients`` threads at once, each with its own target (its own connection);
nq=100 over every query, ``batch_passes`` times (recall@10 at the default
``ef``, from the first pass); the ``ef`` sweep at
nq=100 (QPS and recall per ef, up to the first ef at or past the default
that reaches ``sweep_stop_recall``); each filter at nq=100 (recall against the
exact filtered truth); scalar queries ``tag == v`` with limit 10. Every loop
first sends a few untimed requests (connections, caches, lazy imports).
Requests are bounded in count; nothing loops on time.

The loops run with this process's objects so far frozen out of the garbage
collector (``gc.freeze``): a full collection otherwise scans everything the
imports made (pymilvus brings pandas) and stalls this client 20-30 ms about
every half second. One such stall in the ten requests of an nq=100 pass is a
quarter of its time, and lands on whichever system happens to be measured
then. Freezing is what a latency-sensitive Python client does after start-up;
it applies to every system alike.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from compare_data import CompareSet, recall_at
from compare_targets import Target
from search_data import batches

K = 10
WARMUP = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopOptions:
    ef: int = 64
    ef_sweep: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024, 2048)
    sweep_stop_recall: float = 0.995  # the sweep ends at the first ef >= ``ef`` that reaches it
    nq1_requests: int = 200  # sequential nq=1 requests (the first queries)
    clients: int = 16
    concurrent_requests: int = 320  # nq=1 requests over all concurrent clients
    batch_nq: int = 100
    # The headline nq=100 loop goes over the queries this many times: one pass is only 10
    # requests, and one stall on the shared machine moved a set's ratio by a third (0.49 / 0.72).
    batch_passes: int = 3
    scalar_requests: int = 20
    scalar_limit: int = 10
    filters: bool = True
    scalar: bool = True

    def validate(self) -> None:
        if min(self.nq1_requests, self.clients, self.concurrent_requests, self.batch_nq, self.batch_passes, self.ef) < 1:
            raise ValueError("request counts, clients, batch nq, passes and ef must be >= 1")
        if any(ef < K for ef in (self.ef, *self.ef_sweep)):
            raise ValueError(f"every ef must be >= k ({K})")


def summarize(seconds: list[float], queries: int, wall: float | None = None) -> dict[str, Any]:
    """QPS (queries over ``wall``, default the sum of the requests) and request latency percentiles in ms."""
    ms = np.asarray(seconds) * 1e3
    total = sum(seconds) if wall is None else wall
    return {
        "qps": round(queries / total, 1) if total else 0.0,
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p90_ms": round(float(np.percentile(ms, 90)), 3),
        "p99_ms": round(float(np.percentile(ms, 99)), 3),
        "requests": len(seconds),
    }


def sequential(
    call: Callable[[np.ndarray], list[list[int]]], queries: np.ndarray, nq: int, passes: int = 1
) -> tuple[dict[str, Any], list[list[int]]]:
    """``queries`` ``nq`` at a time, one request after another, ``passes`` times over; the
    hits of the first pass."""
    parts = list(batches(len(queries), nq))
    for part in parts[:WARMUP]:
        call(queries[part])
    seconds: list[float] = []
    found: list[list[int]] = []
    for n in range(passes):
        for part in parts:
            t0 = time.perf_counter()
            hits = call(queries[part])
            seconds.append(time.perf_counter() - t0)
            if n == 0:
                found.extend(hits)
    return summarize(seconds, len(queries) * passes), found


def _concurrent(target: Target, queries: np.ndarray, clients: int, ef: int) -> dict[str, Any]:
    """nq=1 from ``clients`` threads, query ``i`` sent by thread ``i % clients``; QPS over the wall time."""
    siblings = [target.sibling() for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    seconds: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def client(n: int) -> None:
        me = siblings[n]
        mine = queries[n::clients]
        try:
            for q in mine[:WARMUP]:
                me.search(q[None, :], K, ef, None)
        except BaseException as err:  # reported by the caller after the join
            errors.append(err)
        try:
            start.wait()
        except threading.BrokenBarrierError:  # the caller gave up (Ctrl-C): send nothing
            return
        if errors:
            return
        try:
            for q in mine:
                t0 = time.perf_counter()
                me.search(q[None, :], K, ef, None)
                seconds[n].append(time.perf_counter() - t0)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=client, args=(n,), name=f"client-{n}", daemon=True) for n in range(clients)]
    try:
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    except BaseException:
        start.abort()
        raise
    finally:
        for s in siblings:
            if s is not target:
                s.close()
    if errors:
        raise RuntimeError(f"{target.name}: a concurrent client failed") from errors[0]
    out = summarize([s for per in seconds for s in per], len(queries), wall)
    out["clients"] = clients
    return out


@contextlib.contextmanager
def frozen_gc() -> Iterator[None]:
    """Run the block with this process's objects so far frozen out of the garbage collector
    (see the module docstring); every timed client loop of the benchmarks runs in one."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def measure(
    target: Target,
    data: CompareSet,
    opts: LoopOptions,
    log: Callable[[str], None],
    *,
    sweep: bool = True,
    concurrent: bool = True,
) -> dict[str, Any]:
    """Every loop against one loaded target; the figures as a JSON-ready dict.

    ``sweep=False`` skips the ef sweep, ``concurrent=False`` the loop with concurrent clients.
    """
    with frozen_gc():
        return _measure(target, data, opts, log, sweep=sweep, concurrent=concurrent)


def _measure(
    target: Target,
    data: CompareSet,
    opts: LoopOptions,
    log: Callable[[str], None],
    *,
    sweep: bool,
    concurrent: bool,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    qs = data.queries

    def plain(ef: int, expr: str | None = None) -> Callable[[np.ndarray], list[list[int]]]:
        return lambda q: target.search(q, K, ef, expr)

    out["nq1"], _ = sequential(plain(opts.ef), qs[: opts.nq1_requests], 1)
    log(f"{target.name} nq=1 {out['nq1']}")
    if concurrent:
        out["nq1_concurrent"] = _concurrent(target, qs[: opts.concurrent_requests], opts.clients, opts.ef)
        log(f"{target.name} nq=1 x{opts.clients} {out['nq1_concurrent']}")
    out["nq100"], found = sequential(plain(opts.ef), qs, opts.batch_nq, opts.batch_passes)
    out["recall"] = round(recall_at(found, data.truth), 4)
    log(f"{target.name} nq={opts.batch_nq} {out['nq100']} recall {out['recall']}")
    out["ef"] = opts.ef
    if sweep:
        points = []
        for ef in sorted(set(opts.ef_sweep) | {opts.ef}):
            if ef == opts.ef:
                s, r = out["nq100"], out["recall"]
            else:
                s, f = sequential(plain(ef), qs, opts.batch_nq)
                r = round(recall_at(f, data.truth), 4)
            points.append({"ef": ef, "qps": s["qps"], "p50_ms": s["p50_ms"], "recall": r})
            if r >= opts.sweep_stop_recall and ef >= opts.ef:
                break  # a larger ef buys no recall worth its time (a large ef is the slowest search)
        out["sweep"] = points
        log(f"{target.name} sweep {[(p['ef'], p['recall'], p['qps']) for p in points]}")
    if opts.filters:
        out["filtered"] = {}
        for flt in data.filters:
            s, f = sequential(plain(opts.ef, flt.expr), qs, opts.batch_nq)
            s["recall"] = round(recall_at(f, flt.truth), 4)
            s["share"] = round(flt.share, 4)
            s["expr"] = flt.expr
            out["filtered"][flt.label] = s
            log(f"{target.name} filtered {flt.label} {s}")
    if opts.scalar:
        out["scalar_query"] = _scalar_loop(target, opts)
        log(f"{target.name} scalar query {out['scalar_query']}")
    return out


def _scalar_loop(target: Target, opts: LoopOptions) -> dict[str, Any] | None:
    values = np.random.default_rng(3).integers(0, 100, WARMUP + opts.scalar_requests).tolist()
    try:
        for v in values[:WARMUP]:
            target.scalar(v, opts.scalar_limit)
    except NotImplementedError:
        return None
    seconds: list[float] = []
    for v in values[WARMUP:]:
        t0 = time.perf_counter()
        ids = target.scalar(v, opts.scalar_limit)
        seconds.append(time.perf_counter() - t0)
        if len(ids) != opts.scalar_limit:
            raise RuntimeError(f"{target.name}: tag == {v} limit {opts.scalar_limit} returned {len(ids)} rows")
    return summarize(seconds, len(seconds))


def ef_for_recall(sweep: list[dict[str, Any]], goal: float = 0.95) -> int | None:
    """The smallest swept ef whose recall reaches ``goal`` (``None``: none of them did)."""
    for p in sorted(sweep, key=lambda p: p["ef"]):
        if p["recall"] >= goal:
            return int(p["ef"])
    return None


def qps_at_recall(sweep: list[dict[str, Any]], recall: float, slack: float = 0.002) -> float | None:
    """QPS the sweep reaches at ``recall``, interpolated between the two ef around it.

    A ``recall`` above the sweep's best by at most ``slack`` counts as the best point (the sweep
    stops near 1, and 1.0000 against 0.9997 is a tie); further above it, ``None``.
    """
    points = sorted(sweep, key=lambda p: p["ef"])
    best = max((p["recall"] for p in points), default=0.0)
    if best < recall <= best + slack:
        recall = best
    for lo, hi in zip(points, points[1:], strict=False):
        if lo["recall"] >= recall:
            return float(lo["qps"])
        if hi["recall"] >= recall:
            span = hi["recall"] - lo["recall"]
            w = (recall - lo["recall"]) / span if span else 1.0
            return float(lo["qps"] + w * (hi["qps"] - lo["qps"]))
    if points and points[0]["recall"] >= recall:
        return float(points[0]["qps"])
    return None
