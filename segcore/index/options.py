"""Node-level knobs of the index backends (not part of an index definition).

When to search exactly instead of walking the HNSW graph
--------------------------------------------------------
A filtered graph walk skips the rows that are not allowed but still has to
visit them, and calls the filter for each: its cost grows like
``1 / selectivity``, and its recall drops as the allowed rows get sparse. An
exact search over the allowed rows costs ``allowed * dim`` per query. The two
cross where ``allowed ~ c * sqrt(rows)``. Measured on this machine (2 cores,
dim 128, Gaussian data, M=16, efConstruction=200, ef=64, top 10, one query at
a time, the slowest case for the exact search; ms per query, exact vs walk,
and the walk's recall@10 against the filtered truth):

=========  =========  ============  ===========  =============
rows       allowed    exact (ms)    walk (ms)    walk recall
=========  =========  ============  ===========  =============
100k       5%         0.45          2.0          0.87
100k       10%        0.85          1.2          0.83
100k       20%        1.6           0.72         0.75
400k       2%         0.71          8.6          0.85
400k       5%         1.6           3.6          0.72
400k       7.5%       2.3           2.4          0.69
400k       10%        3.4           1.9          0.66
=========  =========  ============  ===========  =============

The crossover sits near ``40 * sqrt(rows)`` (12k of 100k, 25k-30k of 400k),
and at equal cost the exact search is also complete. So a single query is
searched exactly when fewer than ``max(exact_min_rows, exact_sqrt_factor *
sqrt(rows))`` rows are allowed, with 2000 and 40: 2000 rows at least (brute
force over them takes ~0.1 ms), 12.6k of 100k (12.6%), 25.3k of 400k (6.3%),
40k of 1M (4%).

A batch of queries moves the crossover up. The exact search pays once per
call for gathering the allowed rows (~0.2 us a row) and then ~8 ns per row
and query (one matrix product for the batch), while the walk costs the same
per query however many come, and two walks on two cores fight over the GIL
for their filter callbacks. Measured on 200k Gaussian rows (dim 128, M=16,
efConstruction=200, ef=64; ms per query, alone / two searches side by side
as a node's two shards run them; ``benchmarks/filtered_exact.py``):

=========  ====  ===============  ===============
allowed    nq    exact            walk
=========  ====  ===============  ===============
5%         1     2.1 / 12.5       2.8 / 4.5
5%         10    0.21 / 0.44      2.3 / 5.9
10%        1     4.0 / 8.8        1.5 / 2.4
10%        10    0.33 / 0.91      1.2 / 2.1
10%        100   0.21 / 0.32      1.2 / 2.4
20%        10    0.68 / 1.9       0.61 / 1.1
20%        100   0.38 / 0.81      0.61 / 1.3
=========  ====  ===============  ===============

Equating ``allowed * (gather + nq * distance)`` with ``nq * walk(allowed /
rows)`` scales the threshold by ``sqrt(nq * (g + 1) / (g + nq))`` with ``g =
exact_setup_queries`` (25: the gather costs as much as 25 queries' distances):
x2.7 at nq=10, x4.6 at nq=100, at most x5.1. On 1M rows in two shards that
turns the 10%-filtered nq=100 search from a 0.77-recall walk at 114 QPS into
an exact one. Only filtered searches use the batch rule: an unfiltered walk
calls no filter and is several times cheaper than these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexOptions:
    """How indexes are built and searched on this node.

    Attributes:
        threads: hnswlib threads for a build; 1 by default. The worker builds
            with the cores no read holds (``querynode.worker.loader``), and
            tells each search call its threads (``querynode.offload.CoreShare``).
        exact_min_rows: search exactly when fewer rows than this are allowed.
        exact_sqrt_factor: ... or fewer than this times ``sqrt(rows)`` (for one query).
        exact_setup_queries: how many queries' worth of distance work the exact
            search's per-call gathering of the allowed rows costs; sets how far a
            batch of ``nq`` queries raises the threshold.
        seed: hnswlib's random seed (level assignment), for reproducible builds.
        disk_dir: where DISKANN indexes keep their files on this node's local
            disk; ``None`` = ``<tmp>/strata-diskann`` (``diskann_files.py``).
    """

    threads: int = 1
    exact_min_rows: int = 2000
    exact_sqrt_factor: float = 40.0
    exact_setup_queries: float = 25.0
    seed: int = 100
    disk_dir: str | None = None

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError(f"index threads must be at least 1, got {self.threads}")
        if self.exact_min_rows < 0 or self.exact_sqrt_factor < 0 or self.exact_setup_queries < 0:
            raise ValueError("exact-search thresholds must not be negative")

    def exact_threshold(self, num_rows: int, nq: int = 1) -> int:
        """Fewer allowed rows than this are searched exactly, for a batch of ``nq`` queries (module docstring)."""
        g = self.exact_setup_queries
        batch = math.sqrt(max(nq, 1) * (g + 1) / (g + max(nq, 1)))
        return max(self.exact_min_rows, math.ceil(self.exact_sqrt_factor * math.sqrt(num_rows) * batch))


DEFAULT_OPTIONS = IndexOptions()
