"""Strata answers a random workload of pymilvus calls like milvus-lite, and like the model where milvus-lite can't tell.

Each seed runs its workload (``workload.py``) step by step against the
session's Strata standalone and a milvus-lite server: every write goes to both
in turn, consecutive reads go to both concurrently (a Strong read on Strata
waits for the next time tick, so reads in a batch share that wait). A write
whose answers disagree ends the seed, since the two servers' rows may now
differ; read mismatches are collected and all reported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from pymilvus import MilvusClient

from tests.differential.compare import Mismatch, Outcome, judge
from tests.differential.differences import KNOWN_DIFFERENCES, LITE_UNSUPPORTED, Feature
from tests.differential.peer import MilvusLitePeer
from tests.differential.steps import Step
from tests.differential.workload import Workload
from tests.harness import Standalone, dump_logs_on_failure

SEEDS = (2, 11, 13, 19, 23, 28, 44)  # L2 and IP, each nullable field nullable in some (v in 44)
STEP_TIMEOUT = 30.0
CONCURRENT_CALLS = 16


def seeds() -> tuple[int, ...]:
    """``SEEDS``, or those in ``$STRATA_DIFF_SEEDS`` for a longer hunt: ``7``, ``1,5,9`` or ``100-140`` (end excluded)."""
    spec = os.environ.get("STRATA_DIFF_SEEDS", "").strip()
    if not spec:
        return SEEDS
    if "-" in spec:
        first, end = spec.split("-", 1)
        return tuple(range(int(first), int(end)))
    return tuple(int(s) for s in spec.split(","))


def call(client: MilvusClient, step: Step, peer: bool = False) -> Outcome:
    kwargs = step.peer_kwargs if peer and step.peer_kwargs is not None else step.kwargs
    try:
        return Outcome(value=getattr(client, step.method)(**kwargs, timeout=STEP_TIMEOUT))
    except Exception as err:  # any failure is this server's answer, judged against the other's
        return Outcome(error=err)


def execute(
    steps: Sequence[Step], strata: MilvusClient, lite: MilvusClient, pool: ThreadPoolExecutor
) -> list[Mismatch]:
    """Run ``steps`` concurrently on both servers (milvus-lite only where it is asked) and judge each."""
    pending: list[tuple[Step, Future[Outcome], Future[Outcome] | None]] = [
        (step, pool.submit(call, strata, step), None if step.model_only else pool.submit(call, lite, step, True))
        for step in steps
    ]
    mismatches = []
    for step, on_strata, on_lite in pending:
        strata_outcome = on_strata.result()
        lite_outcome = on_lite.result() if on_lite is not None else None
        if problems := judge(step, strata_outcome, lite_outcome):
            mismatches.append(Mismatch(step=step, problems=problems, strata=strata_outcome, lite=lite_outcome))
    return mismatches


def run(
    workload: Workload, strata: MilvusClient, lite: MilvusClient, pool: ThreadPoolExecutor
) -> tuple[list[Mismatch], Counter[Feature]]:
    """Every mismatch of the workload, and how many steps each model-only feature sent to the model alone."""
    mismatches: list[Mismatch] = []
    model_only: Counter[Feature] = Counter()
    reads: list[Step] = []
    for step in workload.steps():
        if step.model_only:
            model_only.update(f for f in step.features if f in KNOWN_DIFFERENCES or f in LITE_UNSUPPORTED)
        if step.read:
            reads.append(step)
            continue
        mismatches += execute(reads, strata, lite, pool)
        reads = []
        if failed := execute([step], strata, lite, pool):
            mismatches += failed
            return mismatches, model_only
    mismatches += execute(reads, strata, lite, pool)
    return mismatches, model_only


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_strata_answers_like_milvus_lite(
    seed: int, standalone: Standalone, milvus_lite: MilvusLitePeer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL, logger="pymilvus")  # it logs every refused call; refusals are expected here
    workload = Workload(seed, prefix=f"diff_{os.getpid()}_s{seed}_")
    strata = MilvusClient(standalone.uri)
    lite = MilvusClient(milvus_lite.uri)
    try:
        with ThreadPoolExecutor(CONCURRENT_CALLS) as pool, dump_logs_on_failure(standalone):
            mismatches, model_only = run(workload, strata, lite, pool)
    finally:
        for alias in workload.created_aliases:
            for client in (strata, lite):
                with contextlib.suppress(Exception):  # best effort, as below
                    client.drop_alias(alias)
        for name in workload.created:
            for client in (strata, lite):
                with contextlib.suppress(Exception):  # best effort: the workload drops what it made when it completes
                    client.drop_collection(name)
        strata.close()
        lite.close()
    if model_only:
        counts = ", ".join(f"{f.name} {n}" for f, n in sorted(model_only.items(), key=lambda kv: kv[0].name))
        warnings.warn(f"seed {seed}: steps checked against the model only (see tests/differential/README.md): {counts}",
                      stacklevel=1)  # fmt: skip
    spec = workload.spec
    header = f"seed {seed}: metric {spec.metric}, nullable {sorted(spec.nullable)}; {len(mismatches)} mismatches"
    assert not mismatches, header + "\n\n" + "\n\n".join(m.render() for m in mismatches)
