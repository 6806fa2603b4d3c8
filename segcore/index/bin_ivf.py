"""BIN_IVF_FLAT: binary codes in ``nlist`` inverted lists; a search scans the ``nprobe`` nearest lists.

Build (blocking, seconds): faiss' ``IndexBinaryIVF`` trains the centroids
(k-means on the codes with faiss' defaults: seed 1234, 10 iterations); then every row goes to
its nearest centroid under the index's metric (ties: the smaller list). Like
knowhere, a small segment gets fewer lists: ``nlist`` drops to ``rows / 39``
(at least 1) when ``39 * nlist > rows`` (knowhere's ``MatchNlist``).

Search: the ``nprobe`` lists (default 8, knowhere's; at most ``nlist``) whose
centroids are nearest to the query under the metric, then the exact metric
over their rows, best first, ties by the smaller row. A HAMMING search with
every row allowed and no range is faiss' own ``IndexBinaryIVF.search`` over
the same lists (the index holds a faiss copy of its lists: ``dim / 8`` more
bytes a row); the others scan the lists here (``bin_exact.py``), because
faiss' binary IVF refuses a row filter (``IDSelector is not supported for
IndexBinaryIVF``) and knows only HAMMING, while Milvus filters searches by a
bitset (deletes, filters) and offers JACCARD. The scan here costs about 0.5 ms
a query at ``nprobe`` 8 over 1M rows (numpy calls per query), faiss' 0.01-0.05
ms (``benchmarks/binary_index.py``).

Filters: like HNSW (``options.py``), a search whose allowed rows are few
(below ``IndexOptions.exact_threshold``, or at most ``topk``) is exact over
them: scanning ``nprobe`` lists of which almost nothing is allowed would
return fewer hits than exist for no saving. A range search keeps the hits of
the probed lists within the range (at most ``topk``).

Stored form (``serialize``): ``b"STRBIVF1"``, then little-endian int64s
``nlist``, ``code_size``, ``rows``, then the centroids (``nlist * code_size``
bytes) and each row's list (``rows`` int32). The codes themselves come from
the segment, as for BIN_FLAT.
"""

from __future__ import annotations

import struct

import faiss
import numpy as np

from segcore.index.base import NO_PARAMS, IndexHits, SearchParams
from segcore.index.bin_exact import binary_exact_topk
from segcore.index.bin_flat import check_binary_metric, check_binary_queries, check_codes
from segcore.index.checks import check_allowed, check_topk
from segcore.index.options import DEFAULT_OPTIONS, IndexOptions
from segcore.index.spec import BinIvfParams, IndexKind
from segcore.segments.binary_metric import binary_distances, popcounts
from segcore.segments.metric import Metric
from segcore.segments.search import select_topk

#: knowhere's default ``nprobe``.
DEFAULT_NPROBE = 8
#: knowhere's ``MatchNlist``: at least this many rows per list, or fewer lists.
MIN_POINTS_PER_CENTROID = 39
#: Rows assigned to their lists per block while building (bounds the distance matrix).
_ASSIGN_BLOCK_CELLS = 8 * 1024 * 1024
_MAGIC = b"STRBIVF1"
_HEADER = struct.Struct("<8sqqq")


def match_nlist(rows: int, nlist: int) -> int:
    """The lists a segment of ``rows`` gets for a requested ``nlist`` (knowhere's rule)."""
    if nlist * MIN_POINTS_PER_CENTROID > rows:
        return max(1, rows // MIN_POINTS_PER_CENTROID)
    return nlist


class BinIvfIndex:
    """Centroids, each row's list (as sorted row positions per list), and the segment's codes."""

    def __init__(
        self,
        codes: np.ndarray,
        metric: Metric,
        centroids: np.ndarray,
        assignment: np.ndarray,
        params: BinIvfParams,
        options: IndexOptions,
    ) -> None:
        """Wrap built or loaded lists; prefer :meth:`build` and :meth:`restore`."""
        self._codes = check_codes(codes)
        self._metric = check_binary_metric(metric)
        self._centroids = np.ascontiguousarray(centroids, dtype=np.uint8)
        self._assignment = np.ascontiguousarray(assignment, dtype=np.int32)
        self._params = params
        self._options = options
        self._counts = popcounts(self._codes)
        self._centroid_counts = popcounts(self._centroids)
        # Rows of list l: _order[_offsets[l]:_offsets[l + 1]], ascending.
        self._order = np.argsort(self._assignment, kind="stable").astype(np.int64)
        sizes = np.bincount(self._assignment, minlength=len(self._centroids))
        self._offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._quantizer, self._faiss = _faiss_lists(self._codes, self._centroids, self._assignment, self._metric)

    @staticmethod
    def build(
        codes: np.ndarray, metric: Metric, params: BinIvfParams, options: IndexOptions = DEFAULT_OPTIONS
    ) -> BinIvfIndex:
        """Train the centroids and assign every row (blocking CPU work)."""
        matrix = check_codes(codes)
        code_size = matrix.shape[1]
        if len(matrix) == 0:
            empty = np.empty((0, code_size), dtype=np.uint8)
            return BinIvfIndex(matrix, metric, empty, np.empty(0, np.int32), params, options)
        nlist = match_nlist(len(matrix), params.nlist)
        quantizer = faiss.IndexBinaryFlat(code_size * 8)
        ivf = faiss.IndexBinaryIVF(quantizer, code_size * 8, nlist)
        ivf.train(matrix)
        # The trained centroids are the quantizer's rows (its ``xb``, absent from faiss' stubs).
        raw = faiss.vector_to_array(quantizer.xb)  # type: ignore[attr-defined]  # not in faiss' stubs
        centroids = raw.astype(np.uint8).reshape(nlist, code_size)
        return BinIvfIndex(matrix, metric, centroids, _assign(metric, matrix, centroids), params, options)

    @staticmethod
    def restore(
        data: bytes | None,
        codes: np.ndarray,
        metric: Metric,
        params: BinIvfParams,
        options: IndexOptions = DEFAULT_OPTIONS,
    ) -> BinIvfIndex:
        """The lists :meth:`serialize` wrote for these ``codes``.

        Raises:
            ValueError: ``data`` is not such lists, or does not fit ``codes``.
        """
        matrix = check_codes(codes)
        if data is None or len(data) < _HEADER.size:
            raise ValueError("a BIN_IVF_FLAT index needs its lists data")
        magic, nlist, code_size, rows = _HEADER.unpack_from(data)
        if magic != _MAGIC:
            raise ValueError("not BIN_IVF_FLAT lists data")
        if (rows, code_size) != matrix.shape:
            raise ValueError(f"BIN_IVF_FLAT lists of ({rows}, {code_size}) over codes of shape {matrix.shape}")
        expected = _HEADER.size + nlist * code_size + 4 * rows
        if nlist < 0 or len(data) != expected:
            raise ValueError(f"BIN_IVF_FLAT lists data of {len(data)} bytes, expected {expected}")
        start = _HEADER.size
        centroids = np.frombuffer(data, np.uint8, nlist * code_size, start).reshape(nlist, code_size)
        assignment = np.frombuffer(data, "<i4", rows, start + nlist * code_size)
        if rows and (assignment.min() < 0 or assignment.max() >= nlist):
            raise ValueError("BIN_IVF_FLAT lists data names a list that does not exist")
        if nlist > params.nlist:
            raise ValueError(f"BIN_IVF_FLAT lists data has {nlist} lists, the index asks for at most {params.nlist}")
        return BinIvfIndex(matrix, metric, centroids, assignment, params, options)

    @property
    def kind(self) -> IndexKind:
        return IndexKind.BIN_IVF_FLAT

    @property
    def metric(self) -> Metric:
        return self._metric

    @property
    def dim(self) -> int:
        """Bytes per row (``dim / 8`` of the field)."""
        return int(self._codes.shape[1])

    @property
    def num_rows(self) -> int:
        return len(self._codes)

    @property
    def nlist(self) -> int:
        """Lists actually built (``match_nlist`` of the requested ones)."""
        return len(self._centroids)

    def serialize(self) -> bytes | None:
        header = _HEADER.pack(_MAGIC, self.nlist, self.dim, self.num_rows)
        return header + self._centroids.tobytes() + self._assignment.astype("<i4").tobytes()

    def search(
        self,
        queries: np.ndarray,
        topk: int,
        *,
        allowed: np.ndarray | None = None,
        params: SearchParams = NO_PARAMS,
        threads: int = 1,
    ) -> IndexHits:
        """See ``VectorIndex.search`` and the module docstring; ``queries`` are uint8 codes."""
        queries = check_binary_queries(queries, self.dim)
        check_topk(topk)
        params.validate(self._metric)
        mask = check_allowed(allowed, self.num_rows)
        num_allowed = self.num_rows if mask is None else int(np.count_nonzero(mask))
        if len(queries) == 0 or num_allowed == 0:
            return IndexHits.empty(len(queries), topk, self._metric)
        if self.searches_exactly(num_allowed, topk, nq=1 if mask is None else len(queries)):
            candidates = None if mask is None else np.flatnonzero(mask)
            return binary_exact_topk(
                self._metric, self._codes, self._counts, queries, topk, candidates=candidates, params=params
            )
        nprobe = min(self.nlist, DEFAULT_NPROBE if params.nprobe is None else int(params.nprobe))
        if self._faiss is not None and mask is None and not params.is_range:
            return self._faiss_search(queries, topk, nprobe)
        coarse = binary_distances(self._metric, queries, self._centroids, self._centroid_counts)
        probed = select_topk(coarse, nprobe)
        hits = IndexHits.empty(len(queries), topk, self._metric)
        for q in range(len(queries)):
            rows = np.sort(np.concatenate([self._order[self._offsets[lst] : self._offsets[lst + 1]] for lst in probed[q]]))
            if mask is not None:
                rows = rows[mask[rows]]
            one = binary_exact_topk(
                self._metric, self._codes, self._counts, queries[q : q + 1], topk, candidates=rows, params=params
            )
            hits.rows[q] = one.rows[0]
            hits.distances[q] = one.distances[0]
        return hits

    def _faiss_search(self, queries: np.ndarray, topk: int, nprobe: int) -> IndexHits:
        """faiss' scan of the ``nprobe`` nearest lists (HAMMING, every row allowed), ties re-ranked by row."""
        assert self._faiss is not None
        probe = faiss.SearchParametersIVF(nprobe=nprobe)  # type: ignore[call-arg]  # faiss' stubs lack the kwargs
        counts, labels = self._faiss.search(queries, topk, params=probe)
        rows = labels.astype(np.int64)
        found = rows >= 0
        dist = np.where(found, counts.astype(np.float32), np.float32(np.inf))
        order = np.lexsort((np.where(found, rows, np.iinfo(np.int64).max), dist), axis=-1)
        hits = IndexHits.empty(len(queries), topk, self._metric)
        hits.rows[:] = np.take_along_axis(np.where(found, rows, -1), order, axis=1)
        hits.distances[:] = np.take_along_axis(dist, order, axis=1)
        return hits

    def searches_exactly(self, num_allowed: int, topk: int, nq: int = 1) -> bool:
        """Whether ``nq`` queries with ``num_allowed`` allowed rows skip the lists for an exact search."""
        if num_allowed <= topk or self.nlist <= 1:
            return True
        return num_allowed < self.num_rows and num_allowed < self._options.exact_threshold(self.num_rows, nq)


def _faiss_lists(
    codes: np.ndarray, centroids: np.ndarray, assignment: np.ndarray, metric: Metric
) -> tuple[faiss.IndexBinaryFlat | None, faiss.IndexBinaryIVF | None]:
    """A faiss ``IndexBinaryIVF`` holding exactly these lists (for HAMMING searches), with its quantizer.

    The quantizer is returned to be kept alive beside the index (faiss does not own it here).
    """
    if metric is not Metric.HAMMING or len(codes) == 0:
        return None, None
    bits = codes.shape[1] * 8
    quantizer = faiss.IndexBinaryFlat(bits)
    quantizer.add(centroids)
    lists = faiss.IndexBinaryIVF(quantizer, bits, len(centroids))
    lists.is_trained = True
    where = np.ascontiguousarray(assignment, dtype=np.int64)
    # add_core(n, codes, ids (None: 0..n-1), the list of each row) places rows in our lists.
    lists.add_core(  # type: ignore[attr-defined]  # not in faiss' stubs
        len(codes), faiss.swig_ptr(codes), None, faiss.swig_ptr(where)
    )
    return quantizer, lists


def _assign(metric: Metric, codes: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid under ``metric`` (ties: the smaller list), int32."""
    out = np.empty(len(codes), dtype=np.int32)
    counts = popcounts(centroids)
    step = max(1, _ASSIGN_BLOCK_CELLS // max(1, len(centroids)))
    for start in range(0, len(codes), step):
        block = codes[start : start + step]
        out[start : start + len(block)] = np.argmin(binary_distances(metric, block, centroids, counts), axis=1)
    return out
