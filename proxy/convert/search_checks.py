"""The search checks Milvus makes once the metric or the searched field's index is known.

A search request's own parameters are checked while it is parsed (``search.py``); these two are
called again by the proxy once the collection's index names the metric and the index type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.errors import InvalidArgument

# Metrics whose larger distances rank first (the others rank smaller first).
_LARGER_IS_BETTER = frozenset({"IP", "COSINE"})
_SMALLER_IS_BETTER = frozenset({"L2", "HAMMING", "JACCARD"})


def check_index_search_params(index_type: str, params: Mapping[str, Any], k: int) -> None:
    """The checks Milvus makes once the searched field's index is known (``k`` = topk + offset).

    Raises:
        InvalidArgument: SCANN's ``reorder_k`` or DISKANN's ``search_list`` below ``k``.
    """
    kind = index_type.strip().upper()
    reorder_k = params.get("reorder_k")
    if kind == "SCANN" and reorder_k is not None and reorder_k < k:
        raise InvalidArgument(f"reorder_k({reorder_k}) should be larger than k({k})")
    search_list = params.get("search_list", params.get("search_list_size"))
    if kind == "DISKANN" and search_list is not None and search_list < k:
        raise InvalidArgument(f"search_list_size({search_list}) should be larger than k({k})")


def check_range(metric: str | None, radius: float | None, range_filter: float | None) -> None:
    """Check a range search's bounds against the metric, as Milvus does.

    ``range_filter`` needs ``radius``. Both given: for L2, HAMMING and
    JACCARD (smaller is better) ``range_filter < radius``, for IP/COSINE
    ``radius < range_filter``. With no metric yet (the client left it to the index) or
    one this check does not know, only the pairing is checked: call again
    once the index's metric is known.

    Raises:
        InvalidArgument: the bounds are in the wrong order, or
            ``range_filter`` came without ``radius``.
    """
    if range_filter is not None and radius is None:
        raise InvalidArgument("range_filter is only valid together with radius (a range search)")
    if radius is None or range_filter is None:
        return
    name = (metric or "").strip().upper()
    if name in _SMALLER_IS_BETTER and not range_filter < radius:
        raise InvalidArgument(
            f"range_filter [{range_filter}] must be less than radius [{radius}] for metric {name}"
        )
    if name in _LARGER_IS_BETTER and not radius < range_filter:
        raise InvalidArgument(
            f"range_filter [{range_filter}] must be greater than radius [{radius}] "
            f"for metric {name}"
        )
