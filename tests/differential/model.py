"""The rows a collection should hold after the workload's writes, and the answers that follow from them.

Plain Python without I/O: the workload updates it as it generates each write
and asks it for the expected answer as it generates each read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import numpy as np

from tests.differential.data import FIELDS, Row
from tests.differential.filter_tree import Filter

DEFAULT_PARTITION: Final = "_default"


class Model:
    """Live rows by primary key and the partition each is in, and how many rows were ever written
    (what Strata's ``row_count`` reports). A key is live in one partition at most: the workload
    upserts a live key only into its own partition."""

    def __init__(self) -> None:
        self.rows: dict[int, Row] = {}
        self.partition_of: dict[int, str] = {}
        self.written = 0
        self.wide_ints = False  # an ``i`` beyond ±2**53 (not exact as a double) was written

    def write(self, rows: Iterable[Row], partition: str = DEFAULT_PARTITION) -> None:
        """Insert or upsert into ``partition``: a row replaces any live row with its key."""
        for row in rows:
            assert self.partition_of.get(row["id"], partition) == partition, "a key moved between partitions"
            self.rows[row["id"]] = dict(row)
            self.partition_of[row["id"]] = partition
            self.written += 1
            self.wide_ints |= abs(row["i"]) > 2**53

    def delete_ids(self, ids: Iterable[int]) -> None:
        for pk in ids:
            self.rows.pop(pk, None)
            self.partition_of.pop(pk, None)

    def delete_where(self, f: Filter, partitions: Collection[str] | None = None) -> list[int]:
        """Delete the rows ``f`` matches (in ``partitions``, all for None); their keys, ascending."""
        pks = [row["id"] for row in self.matching(f, partitions)]
        self.delete_ids(pks)
        return pks

    def drop_partition(self, partition: str) -> None:
        self.delete_ids([pk for pk, p in self.partition_of.items() if p == partition])

    def in_partition(self, partition: str) -> list[int]:
        """The live keys of ``partition``, ascending."""
        return sorted(pk for pk, p in self.partition_of.items() if p == partition)

    def matching(self, f: Filter | None, partitions: Collection[str] | None = None) -> list[Row]:
        """Live rows ``f`` matches (all for None) in ``partitions`` (all for None), by ascending key."""
        return [
            self.rows[pk]
            for pk in sorted(self.rows)
            if (partitions is None or self.partition_of[pk] in partitions) and (f is None or f.holds(self.rows[pk]))
        ]

    def ranked(
        self,
        query: Sequence[float] | Mapping[int, float],
        f: Filter | None,
        metric: Literal["L2", "IP"],
        partitions: Collection[str] | None = None,
        field: str = "v",
    ) -> list[tuple[int, float]]:
        """Every matching row that can be a hit, as (key, distance), best first, with Milvus's distances (squared L2,
        inner product). A row whose ``field`` is null is never a hit; on the sparse field ``sp`` neither is a row
        that shares no dimension with the query (its inner product is 0: the inverted index never meets it)."""
        rows = [row for row in self.matching(f, partitions) if row[field] is not None]
        if field == "sp":
            assert isinstance(query, Mapping)
            scored = [(row["id"], sparse_ip(query, row["sp"])) for row in rows if query.keys() & row["sp"].keys()]
            return sorted(scored, key=lambda hit: -hit[1])
        if not rows:
            return []
        data = np.asarray([row[field] for row in rows], dtype=np.float64)
        q = np.asarray(query, dtype=np.float64)
        if metric == "L2":
            dist = ((data - q) ** 2).sum(axis=1)
            order = np.argsort(dist, kind="stable")
        else:
            dist = data @ q
            order = np.argsort(-dist, kind="stable")
        return [(int(rows[j]["id"]), float(dist[j])) for j in order]


def sparse_ip(a: Mapping[int, float], b: Mapping[int, float]) -> float:
    return sum(w * b[k] for k, w in a.items() if k in b)


def drop_smallest(query: Mapping[int, float], ratio: float) -> dict[int, float]:
    """``query`` without its ``floor(ratio * nnz)`` smallest weights, as ``drop_ratio_search`` does (the workload
    sends distinct weights, so which ones go is defined)."""
    cut = int(ratio * len(query))
    dropped = set(sorted(query, key=lambda k: query[k])[:cut])
    return {k: w for k, w in query.items() if k not in dropped}


def query_projection(row: Row, output_fields: Sequence[str] | None) -> dict[str, Any]:
    """What query/get return for ``row``: every field for None or ``*``, else the named ones and the key."""
    if output_fields is None or "*" in output_fields:
        return {k: row[k] for k in FIELDS}
    return {k: row[k] for k in FIELDS if k == "id" or k in output_fields}


def search_projection(row: Row, output_fields: Sequence[str] | None) -> dict[str, Any]:
    """A search hit's ``entity``: nothing for None, every field for ``*``, else exactly the named ones."""
    if output_fields is None:
        return {}
    if "*" in output_fields:
        return {k: row[k] for k in FIELDS}
    return {k: row[k] for k in FIELDS if k in output_fields}
