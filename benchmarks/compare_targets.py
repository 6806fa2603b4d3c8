"""What the timed loops search: one interface, a pymilvus backend (both servers) and the two in-process bounds.

A ``Target`` answers top-k searches (optionally at an ``ef`` and under a
filter expression) and limit-10 scalar queries, and hands out a sibling for
another concurrent client. The two servers share one implementation,
``MilvusTarget``: the same pymilvus calls, with the same arguments, reach
Strata and milvus-lite.
"""

from __future__ import annotations

from typing import Any, Protocol

import hnswlib
import numpy as np
from compare_data import CompareSet
from pymilvus import MilvusClient
from search_data import sqnorms, topk_l2

COLLECTION = "compare"
VECTOR = "v"


class Target(Protocol):
    name: str

    def search(self, queries: np.ndarray, k: int, ef: int, expr: str | None) -> list[list[int]]:
        """Ids of the ``k`` nearest rows per query, best first; blocks until answered."""
        ...

    def scalar(self, value: int, limit: int) -> list[int]:
        """Ids of up to ``limit`` rows whose tag equals ``value``."""
        ...

    def sibling(self) -> Target:
        """A target for one more concurrent client (its own connection, where there is one)."""
        ...

    def close(self) -> None: ...


class MilvusTarget:
    """pymilvus against a server; searches are ``Eventually`` consistent (the search path, not tsafe)."""

    def __init__(self, name: str, uri: str) -> None:
        self.name = name
        self.uri = uri
        # dedicated: its own gRPC channel, not the one pymilvus would share between clients of one uri
        self.client = MilvusClient(uri, timeout=600, dedicated=True)

    def search(self, queries: np.ndarray, k: int, ef: int, expr: str | None) -> list[list[int]]:
        # Lists, converted inside the timed call: pymilvus packs each vector with struct.pack(*v),
        # 0.86 ms for 100 numpy rows of 128 floats (each element unboxed) against 0.26 ms with tolist().
        res = self.client.search(
            COLLECTION,
            data=queries.tolist(),
            limit=k,
            anns_field=VECTOR,
            filter=expr or "",
            search_params={"metric_type": "L2", "params": {"ef": ef}},
            consistency_level="Eventually",
        )
        return [list(hits.ids) for hits in res]

    def scalar(self, value: int, limit: int) -> list[int]:
        rows = self.client.query(
            COLLECTION,
            filter=f"tag == {value}",
            output_fields=["id", "tag"],
            limit=limit,
            consistency_level="Eventually",
        )
        if any(r["tag"] != value for r in rows):
            raise RuntimeError(f"{self.name}: query tag == {value} returned other tags")
        return [int(r["id"]) for r in rows]

    def sibling(self) -> MilvusTarget:
        return MilvusTarget(self.name, self.uri)

    def close(self) -> None:
        self.client.close()


class HnswlibTarget:
    """One hnswlib graph in this process; ``ef`` is set per call (calls come from one thread at a time
    per ef; the concurrent loop uses one ef), filters go into the walk as a bitset like Strata's."""

    name = "hnswlib"

    def __init__(self, index: hnswlib.Index, masks: dict[str, np.ndarray], threads: int) -> None:
        self.index = index
        self.threads = threads
        self._masks = masks  # filter expression -> allowed rows
        self._ef = -1

    def search(self, queries: np.ndarray, k: int, ef: int, expr: str | None) -> list[list[int]]:
        if ef != self._ef:
            self.index.set_ef(ef)
            self._ef = ef
        allow = None if expr is None else self._masks[expr].view(np.uint8).data.__getitem__
        try:
            labels = self.index.knn_query(queries, k=k, num_threads=self.threads, filter=allow)[0]
        except RuntimeError:  # fewer than k allowed rows reached for some query: ask one query at a time
            return [self._one(q, k, allow) for q in queries]
        return labels.astype(np.int64).tolist()  # type: ignore[no-any-return]

    def _one(self, query: np.ndarray, k: int, allow: Any) -> list[int]:
        for n in range(k, 0, -1):
            try:
                return self.index.knn_query(query, k=n, num_threads=1, filter=allow)[0][0].astype(np.int64).tolist()  # type: ignore[no-any-return]
            except RuntimeError:
                continue
        return []

    def scalar(self, value: int, limit: int) -> list[int]:
        raise NotImplementedError("hnswlib holds no scalar field")

    def sibling(self) -> HnswlibTarget:
        """The same graph, one thread per call: the concurrency comes from the callers."""
        return HnswlibTarget(self.index, self._masks, threads=1)

    def close(self) -> None:
        pass


class NumpyTarget:
    """Exact search by one float32 matrix product per request; a filter searches its rows' own matrix."""

    name = "numpy"

    def __init__(self, data: CompareSet) -> None:
        self.vectors = data.vectors
        self.tags = data.tags
        self.norms = sqnorms(data.vectors)
        self._subsets: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for f in data.filters:
            keep = np.flatnonzero(f.mask)
            self._subsets[f.expr] = (keep, data.vectors[keep], self.norms[keep])

    def search(self, queries: np.ndarray, k: int, ef: int, expr: str | None) -> list[list[int]]:
        if expr is None:
            return topk_l2(self.vectors, self.norms, queries, k).tolist()  # type: ignore[no-any-return]
        keep, vectors, norms = self._subsets[expr]
        return keep[topk_l2(vectors, norms, queries, min(k, len(keep)))].tolist()  # type: ignore[no-any-return]

    def scalar(self, value: int, limit: int) -> list[int]:
        return np.flatnonzero(self.tags == value)[:limit].tolist()  # type: ignore[no-any-return]

    def sibling(self) -> NumpyTarget:
        return self

    def close(self) -> None:
        pass
