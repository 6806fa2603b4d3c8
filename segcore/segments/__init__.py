"""In-memory segment data for the query node: growing rows, MVCC, exact search, reduce."""

from segcore.segments.growing import DISTANCE_COLUMN, QUERY_COLUMN, GrowingStore
from segcore.segments.metric import Metric, UnknownMetricError, larger_is_better, parse_metric
from segcore.segments.reduce import merge_topk

__all__ = [
    "DISTANCE_COLUMN",
    "QUERY_COLUMN",
    "GrowingStore",
    "Metric",
    "UnknownMetricError",
    "larger_is_better",
    "merge_topk",
    "parse_metric",
]
