"""The BM25 parameters of an index on a BM25 function's output field (knowhere's ranges)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from common.errors import InvalidArgument

#: knowhere's ranges of ``bm25_k1`` and ``bm25_b``.
K1_RANGE = (0.0, 3.0)
B_RANGE = (0.0, 1.0)


def bm25_params(params: Mapping[str, str]) -> dict[str, object]:
    """``bm25_k1`` / ``bm25_b`` of a CreateIndex's params, top level or inside the ``params`` JSON."""
    out: dict[str, object] = {k: params[k] for k in ("bm25_k1", "bm25_b") if k in params}
    raw = params.get("params")
    if raw:
        try:
            nested = json.loads(raw)
        except ValueError:
            nested = {}
        if isinstance(nested, dict):
            out.update({k: nested[k] for k in ("bm25_k1", "bm25_b") if k in nested})
    return out


def check_bm25_index_params(params: Mapping[str, str]) -> None:
    """``InvalidArgument`` unless ``bm25_k1`` is in [0, 3] and ``bm25_b`` in [0, 1] (when given)."""
    for key, (low, high) in (("bm25_k1", K1_RANGE), ("bm25_b", B_RANGE)):
        raw = bm25_params(params).get(key)
        if raw is None:
            continue
        not_a_number = InvalidArgument(f"param '{key}' ({raw}) should be a number")
        if not isinstance(raw, str | int | float):  # a JSON list or object
            raise not_a_number
        try:
            value = float(raw)
        except ValueError:
            raise not_a_number from None
        if isinstance(raw, bool) or not low <= value <= high:
            raise InvalidArgument(f"param '{key}' ({raw}) should be in range [{low}, {high}]")
