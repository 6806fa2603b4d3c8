"""The rows a collection should hold after the workload's writes, and the answers that follow from them.

Plain Python without I/O: the workload updates it as it generates each write
and asks it for the expected answer as it generates each read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np

from tests.differential.data import FIELDS, Row
from tests.differential.filters import Filter


class Model:
    """Live rows by primary key, and how many rows were ever written (what Strata's ``row_count`` reports)."""

    def __init__(self) -> None:
        self.rows: dict[int, Row] = {}
        self.written = 0
        self.wide_ints = False  # an ``i`` beyond ±2**53 (not exact as a double) was written

    def write(self, rows: Iterable[Row]) -> None:
        """Insert or upsert: a row replaces any live row with its key."""
        for row in rows:
            self.rows[row["id"]] = dict(row)
            self.written += 1
            self.wide_ints |= abs(row["i"]) > 2**53

    def delete_ids(self, ids: Iterable[int]) -> None:
        for pk in ids:
            self.rows.pop(pk, None)

    def delete_where(self, f: Filter) -> list[int]:
        """Delete the rows ``f`` matches; their keys, ascending."""
        pks = [row["id"] for row in self.matching(f)]
        self.delete_ids(pks)
        return pks

    def matching(self, f: Filter | None) -> list[Row]:
        """Live rows ``f`` matches (all for None), by ascending key."""
        return [self.rows[pk] for pk in sorted(self.rows) if f is None or f.holds(self.rows[pk])]

    def ranked(self, query: Sequence[float], f: Filter | None, metric: Literal["L2", "IP"]) -> list[tuple[int, float]]:
        """Every matching row as (key, distance), best first, with Milvus's distances (squared L2, inner product)."""
        rows = self.matching(f)
        if not rows:
            return []
        data = np.asarray([row["v"] for row in rows], dtype=np.float64)
        q = np.asarray(query, dtype=np.float64)
        if metric == "L2":
            dist = ((data - q) ** 2).sum(axis=1)
            order = np.argsort(dist, kind="stable")
        else:
            dist = data @ q
            order = np.argsort(-dist, kind="stable")
        return [(int(rows[j]["id"]), float(dist[j])) for j in order]


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
