"""The proxy's Prometheus metrics, under Milvus's names where Milvus has one (``pkg/metrics/proxy_metrics.go``).

One observation per request, taken by the access interceptor (``access.py``)
from the request and its answer, never per row. The Python client adds
``_total`` to every counter's name (``milvus_proxy_req_count_total``);
latencies are in milliseconds, as Milvus's are.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Counter, Histogram

#: Milvus's ``buckets``: 1 ms doubling to about 131 s.
LATENCY_BUCKETS_MS = tuple(float(2**i) for i in range(18))
SUCCESS = "success"
FAIL = "fail"

REQ_COUNT = Counter(
    "milvus_proxy_req_count", "Requests the proxy answered, by RPC and status (success, fail)",
    ["node_id", "function_name", "status"],
)
REQ_LATENCY = Histogram(
    "milvus_proxy_req_latency", "Latency of the proxy's requests, by RPC (ms)",
    ["node_id", "function_name"], buckets=LATENCY_BUCKETS_MS,
)
INSERT_VECTORS = Counter(
    "milvus_proxy_insert_vectors_count", "Rows inserted through the proxy", ["node_id", "db_name", "collection_name"]
)
UPSERT_VECTORS = Counter(
    "milvus_proxy_upsert_vectors_count", "Rows upserted through the proxy", ["node_id", "db_name", "collection_name"]
)
DELETE_VECTORS = Counter(
    "milvus_proxy_delete_vectors_count", "Rows deleted through the proxy", ["node_id", "db_name", "collection_name"]
)
SEARCH_VECTORS = Counter(
    "milvus_proxy_search_vectors_count", "Query vectors searched (nq of each search)",
    ["node_id", "db_name", "collection_name"],
)
SEARCH_HITS = Counter(
    "strata_proxy_search_hits", "Hits returned by searches (the sum of every query vector's top-k found)",
    ["node_id", "db_name", "collection_name"],
)
RESULT_BYTES = Histogram(
    "strata_proxy_result_bytes", "Serialized size of search and query results, by RPC",
    ["node_id", "function_name"], buckets=tuple(float(4**i) for i in range(4, 15)),
)

# Each metric's child per label values, as ``labels()`` would return it (that call takes a lock and
# builds a key each time: seven per Search, ~15 us). Label values are never removed, so a child
# once made stays the metric's for those values.
_CHILDREN: dict[tuple[int, tuple[str, ...]], Any] = {}


def _child(metric: Counter | Histogram, *labels: str) -> Any:
    key = (id(metric), labels)
    child = _CHILDREN.get(key)
    if child is None:
        child = _CHILDREN[key] = metric.labels(*labels)
    return child


_MUTATIONS = {"Insert": (INSERT_VECTORS, "insert_cnt"), "Upsert": (UPSERT_VECTORS, "upsert_cnt"),
              "Delete": (DELETE_VECTORS, "delete_cnt")}  # fmt: skip
_READS = frozenset({"Search", "HybridSearch", "Query"})


def observe(
    *, node_id: str, method: str, ok: bool, latency_ms: float, request: Any, response: Any, db: str, collection: str
) -> None:
    """Count one answered request; ``response`` is None when the call was refused before the handler."""
    _child(REQ_COUNT, node_id, method, SUCCESS if ok else FAIL).inc()
    _child(REQ_LATENCY, node_id, method).observe(latency_ms)
    if not ok or response is None:
        return
    mutation = _MUTATIONS.get(method)
    if mutation is not None:
        counter, field = mutation
        _child(counter, node_id, db, collection).inc(getattr(response, field))
    elif method in _READS:
        if method == "Search":
            _child(SEARCH_VECTORS, node_id, db, collection).inc(request.nq)
        if method != "Query":
            _child(SEARCH_HITS, node_id, db, collection).inc(sum(response.results.topks))
        _child(RESULT_BYTES, node_id, method).observe(response.ByteSize())
