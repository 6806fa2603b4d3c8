"""Distance metrics with Milvus' conventions.

* ``L2``: squared Euclidean distance; smaller is better.
* ``IP``: inner product; larger is better.
* ``COSINE``: cosine similarity (both sides normalised, a zero vector scores
  0); larger is better.

Binary vectors (``BINARY_VECTOR``) have their own metrics, all smaller-is-better
(``binary_metric.py`` computes them):

* ``HAMMING``: the number of differing bits (a whole number, as a float);
* ``JACCARD``: ``1 - |a & b| / |a | b|`` in ``[0, 1]`` (1 when both are all zeros);
* ``SUBSTRUCTURE`` / ``SUPERSTRUCTURE``: 0 for a row that contains the query
  (``query & row == query``) / that the query contains (``query & row == row``);
  other rows are never hits. Milvus offers them on ``BIN_FLAT`` only.

Names are case-insensitive. Distances are computed in float32, like Milvus.
"""

from __future__ import annotations

import enum
from typing import assert_never

import numpy as np

from common.errors import InvalidArgument


class UnknownMetricError(InvalidArgument, ValueError):
    """A metric name Strata does not know (an invalid argument at the edge)."""


class Metric(enum.Enum):
    L2 = "L2"
    IP = "IP"
    COSINE = "COSINE"
    HAMMING = "HAMMING"
    JACCARD = "JACCARD"
    SUBSTRUCTURE = "SUBSTRUCTURE"
    SUPERSTRUCTURE = "SUPERSTRUCTURE"
    BM25 = "BM25"  # full-text search over a BM25 function's output (``segcore/index/bm25_scoring.py``)

    @property
    def larger_is_better(self) -> bool:
        match self:
            case Metric.L2 | Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE:
                return False
            case Metric.IP | Metric.COSINE | Metric.BM25:
                return True
            case _:
                assert_never(self)

    @property
    def is_binary(self) -> bool:
        """A metric of binary vectors (the others are of float vectors)."""
        return self in BINARY_METRICS


#: Metrics of ``FLOAT_VECTOR`` fields, in Milvus' order.
FLOAT_METRICS = (Metric.L2, Metric.IP, Metric.COSINE)
#: Metrics of ``BINARY_VECTOR`` fields, in Milvus' order.
BINARY_METRICS = (Metric.HAMMING, Metric.JACCARD, Metric.SUBSTRUCTURE, Metric.SUPERSTRUCTURE)


def parse_metric(name: str) -> Metric:
    """The metric called ``name`` (any case); :class:`UnknownMetricError` otherwise."""
    try:
        return Metric(name.upper())
    except (ValueError, AttributeError):
        raise UnknownMetricError(f"unknown metric type {name!r}") from None


def larger_is_better(metric: str) -> bool:
    """Whether a larger distance ranks first under ``metric``."""
    return parse_metric(metric).larger_is_better


def distances(
    metric: Metric, queries: np.ndarray, base: np.ndarray, base_sqnorms: np.ndarray
) -> np.ndarray:
    """``(nq, n)`` float32 distances between ``queries (nq, d)`` and ``base (n, d)``.

    ``base_sqnorms`` are the squared L2 norms of ``base``'s rows. Float metrics
    only (``binary_metric.binary_distances`` computes the binary ones).
    """
    if metric.is_binary:
        raise ValueError(f"{metric.value} is a metric of binary vectors")
    products: np.ndarray = queries @ base.T
    match metric:
        case Metric.IP:
            return products
        case Metric.L2:
            query_sqnorms = np.einsum("ij,ij->i", queries, queries)
            # |q - x|^2 = |q|^2 + |x|^2 - 2 q.x, clamped: rounding can dip below 0.
            out = products
            out *= -2.0
            out += query_sqnorms[:, None]
            out += base_sqnorms[None, :]
            np.maximum(out, 0.0, out=out)
            return out
        case Metric.COSINE:
            query_norms = np.sqrt(np.einsum("ij,ij->i", queries, queries))
            products *= _inverse_or_zero(query_norms)[:, None]
            products *= _inverse_or_zero(np.sqrt(base_sqnorms))[None, :]
            return products
        case Metric.HAMMING | Metric.JACCARD | Metric.SUBSTRUCTURE | Metric.SUPERSTRUCTURE:
            raise AssertionError("unreachable: checked above")
        case Metric.BM25:
            raise ValueError("BM25 scores sparse rows, not dense vectors")
        case _:
            assert_never(metric)


def _inverse_or_zero(norms: np.ndarray) -> np.ndarray:
    out = np.zeros_like(norms)
    np.divide(1.0, norms, out=out, where=norms > 0)
    return out
