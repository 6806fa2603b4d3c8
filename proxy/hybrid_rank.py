"""A hybrid search's ranker and paging, from ``rank_params`` or a ``function_score`` (see ``hybrid.py``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument, NotSupported
from common.jsonvalue import load_json
from proxy.convert.search import TOPK_LIMIT, parse_number

RRF_DEFAULT_K = 60.0
RRF_K_LIMIT = 16384.0
"""RRF's ``k`` must lie strictly between 0 and this (Milvus' bound)."""


ROUND_DECIMAL_MAX = 6
# rank_params keys pymilvus sends for grouping a hybrid search (not served yet).
_GROUPING_KEYS = ("group_by_field", "group_size", "strict_group_size", "rank_group_scorer")
_FUNCTION_RERANKER_KEY = "reranker"


@dataclass(frozen=True, slots=True, kw_only=True)
class RRFRanker:
    """Reciprocal rank fusion: a key scores ``sum(1 / (k + rank))``, rank 1 being the best hit."""

    k: float = RRF_DEFAULT_K

    def validate(self) -> None:
        if not (math.isfinite(self.k) and 0 < self.k < RRF_K_LIMIT):
            raise InvalidArgument(f"rank param k [{self.k:g}] is invalid, it should be in range (0, {RRF_K_LIMIT:g})")


@dataclass(frozen=True, slots=True, kw_only=True)
class WeightedRanker:
    """Weighted sum of the sub searches' (by default unmapped) distances, one weight per sub search."""

    weights: tuple[float, ...]
    norm_score: bool = False
    """Map each distance to ``[0, 1]`` by its metric first (pymilvus sends ``true`` unless told)."""

    def validate(self, sub_requests: int) -> None:
        if not self.weights:
            raise InvalidArgument("rank param weights is empty: give one weight per ann search request")
        if len(self.weights) != sub_requests:
            raise InvalidArgument(
                f"the number of weights ({len(self.weights)}) does not match the number of "
                f"ann search requests ({sub_requests})"
            )
        for weight in self.weights:
            if not 0 <= weight <= 1:
                raise InvalidArgument(f"rank param weight [{weight:g}] is invalid, it should be in range [0, 1]")


Ranker = RRFRanker | WeightedRanker


@dataclass(frozen=True, slots=True, kw_only=True)
class HybridRank:
    """How the sub searches' hits are fused and paged."""

    ranker: Ranker
    limit: int
    offset: int = 0
    round_decimal: int = -1


def parse_rank(
    rank_params: Mapping[str, str],
    function_score: schema_pb2.FunctionScore | None,
    *,
    sub_requests: int,
    max_topk: int = TOPK_LIMIT,
) -> HybridRank:
    """The ranker and paging of a hybrid search, checked as Milvus checks them.

    ``function_score``, when it holds a function, names the ranker; otherwise
    ``strategy`` and ``params`` in ``rank_params`` do (no ``strategy``: RRF
    with ``k`` = 60, as in Milvus).

    Raises:
        InvalidArgument: an unknown strategy, malformed params, ``k`` outside
            (0, 16384), weights not one per sub request or outside [0, 1],
            ``limit``/``offset``/``round_decimal`` missing or out of range.
        NotSupported: a reranker other than RRF or weighted, or grouping.
    """
    for key in _GROUPING_KEYS:
        if rank_params.get(key, "").strip() not in ("", "None"):
            raise NotSupported(f"hybrid search with {key} is not supported yet")
    if function_score is not None and len(function_score.functions) > 0:
        ranker = _ranker_from_function_score(function_score)
    else:
        ranker = _ranker_from_rank_params(rank_params)
    match ranker:
        case RRFRanker():
            ranker.validate()
        case WeightedRanker():
            ranker.validate(sub_requests)
    if "limit" not in rank_params:
        raise InvalidArgument("limit not found in rank_params")
    limit = _int_param("limit", rank_params["limit"])
    offset = _int_param("offset", rank_params.get("offset") or 0)
    round_decimal = _int_param("round_decimal", rank_params.get("round_decimal") or -1)
    if not 1 <= limit <= max_topk:
        raise InvalidArgument(f"limit [{limit}] is invalid, it should be in range [1, {max_topk}], but got {limit}")
    if offset < 0:
        raise InvalidArgument(f"offset [{offset}] is invalid, it should be non-negative")
    if limit + offset > max_topk:
        raise InvalidArgument(
            f"limit+offset [{limit + offset}] is invalid, it should be in range [1, {max_topk}], "
            f"but got {limit + offset}"
        )
    if round_decimal != -1 and not 0 <= round_decimal <= ROUND_DECIMAL_MAX:
        raise InvalidArgument(
            f"round_decimal {round_decimal} is invalid, should be -1 or an integer in range [0, {ROUND_DECIMAL_MAX}]"
        )
    return HybridRank(ranker=ranker, limit=limit, offset=offset, round_decimal=round_decimal)


def _ranker_from_rank_params(rank_params: Mapping[str, str]) -> Ranker:
    strategy = rank_params.get("strategy", "").strip()
    if not strategy:
        return RRFRanker()
    if "params" not in rank_params:
        raise InvalidArgument("params not found in rank_params")
    try:
        params = load_json(rank_params["params"])
    except ValueError as err:
        raise InvalidArgument(f"rank params is not valid JSON: {err}") from None
    if not isinstance(params, dict):
        raise InvalidArgument("rank params must be a JSON object")
    match strategy.lower():
        case "rrf":
            return RRFRanker(k=_number("k", params["k"]) if "k" in params else RRF_DEFAULT_K)
        case "weighted":
            norm = params.get("norm_score", False)
            if not isinstance(norm, bool):
                raise InvalidArgument(f"rank param norm_score [{norm}] is invalid, it should be true or false")
            return WeightedRanker(weights=_weights(params.get("weights")), norm_score=norm)
        case _:
            raise InvalidArgument(f"unsupported rank strategy {strategy!r}: use 'rrf' or 'weighted'")


def _ranker_from_function_score(function_score: schema_pb2.FunctionScore) -> Ranker:
    if len(function_score.functions) > 1:
        raise InvalidArgument(f"hybrid search takes one rerank function, got {len(function_score.functions)}")
    function = function_score.functions[0]
    if function.type != schema_pb2.FunctionType.Rerank:
        got = schema_pb2.FunctionType.Name(function.type)
        raise InvalidArgument(f"function {function.name!r} of type {got} is not a rerank function")
    params = {p.key.lower(): p.value for p in function.params}
    name = params.get(_FUNCTION_RERANKER_KEY, "").strip().lower()
    if name not in ("rrf", "weighted"):
        raise NotSupported(f"reranker {name!r} is not supported in hybrid search: use 'rrf' or 'weighted'")
    if len(function.input_field_names) > 0:
        raise InvalidArgument(f"the {name} reranker takes no input fields, got {list(function.input_field_names)}")
    if name == "rrf":
        return RRFRanker(k=_number("k", params["k"]) if "k" in params else RRF_DEFAULT_K)
    if "weights" not in params:
        raise InvalidArgument("rank param weights not found")
    try:
        weights = load_json(params["weights"])
    except ValueError:
        raise InvalidArgument(f"rank param weights [{params['weights']}] should be a list of numbers") from None
    norm_text = params.get("norm_score", "false").strip().lower()
    if norm_text not in ("true", "false", "1", "0"):
        raise InvalidArgument(f"rank param norm_score [{params['norm_score']}] is invalid, it should be true or false")
    return WeightedRanker(weights=_weights(weights), norm_score=norm_text in ("true", "1"))


def _weights(raw: Any) -> tuple[float, ...]:
    if raw is None:
        raise InvalidArgument("rank param weights not found")
    if not isinstance(raw, list):
        raise InvalidArgument(f"rank param weights [{raw}] should be a list of numbers")
    return tuple(_number("weight", w) for w in raw)


def _number(key: str, raw: Any) -> float:
    return parse_number(f"rank param {key}", raw)


def _int_param(key: str, raw: Any) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise InvalidArgument(f"{key} [{raw}] is invalid, it should be an integer") from None
