"""DISKANN's build parameters, with Milvus' names, ranges and defaults.

==============================  =====================  =========  ==========================================
name                            range                  default    what it sets (``diskann_index.py``)
==============================  =====================  =========  ==========================================
``max_degree``                  [1, 512]               56         the Vamana graph's out-degree (``R``)
``search_list_size``            [1, 2^31 - 1]          100        the build's candidate list (``L``)
``pq_code_budget_gb_ratio``     (0, 0.25]              0.125      in-memory PQ code bytes / raw vector bytes
``num_build_thread_ratio``      (0, 1]                 1.0        build threads / the threads a build is granted
``search_cache_budget_gb_ratio``  [0, 0.3)             0.10       graph nodes cached in memory / raw bytes
==============================  =====================  =========  ==========================================

The defaults are Milvus 2.6's ``knowhere.DISKANN.build.*`` (and the
``DiskIndex`` section of ``milvus.yaml``), the ranges its docs' (``MaxDegree``
[1, 512], ``PQCodeBudgetGBRatio`` (0.0, 0.25], ``SearchCacheBudgetGBRatio``
[0.0, 0.3)). Numbers may be JSON numbers or decimal strings, as pymilvus
sends them. Other keys are ignored, as Milvus does. Each error is an
``InvalidArgument`` naming the parameter.

The search parameter is ``search_list`` (Milvus' name; knowhere's
``search_list_size`` is read too): the candidate list of a search, in
[topk, 2^31 - 1], ``max(topk, 16)`` when not given (knowhere's default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import InvalidArgument
from segcore.index.faiss_params import int_param

INT32_MAX = 2**31 - 1

MAX_DEGREE_RANGE = (1, 512)
DEFAULT_MAX_DEGREE = 56
SEARCH_LIST_SIZE_RANGE = (1, INT32_MAX)
DEFAULT_SEARCH_LIST_SIZE = 100
DEFAULT_PQ_CODE_BUDGET_GB_RATIO = 0.125
DEFAULT_NUM_BUILD_THREAD_RATIO = 1.0
DEFAULT_SEARCH_CACHE_BUDGET_GB_RATIO = 0.10
#: knowhere's smallest default search list (``max(topk, 16)``).
MIN_DEFAULT_SEARCH_LIST = 16

Raw = Mapping[str, str | int | float]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiskannParams:
    """DISKANN's resolved build parameters."""

    max_degree: int = DEFAULT_MAX_DEGREE
    search_list_size: int = DEFAULT_SEARCH_LIST_SIZE
    pq_code_budget_gb_ratio: float = DEFAULT_PQ_CODE_BUDGET_GB_RATIO
    num_build_thread_ratio: float = DEFAULT_NUM_BUILD_THREAD_RATIO
    search_cache_budget_gb_ratio: float = DEFAULT_SEARCH_CACHE_BUDGET_GB_RATIO

    def canonical(self) -> dict[str, int | str | bool]:
        """Milvus' names and the values the built index depends on (ratios as decimal strings:
        ``meta.json`` compares them exactly)."""
        return {
            "max_degree": self.max_degree,
            "search_list_size": self.search_list_size,
            "pq_code_budget_gb_ratio": repr(self.pq_code_budget_gb_ratio),
            "search_cache_budget_gb_ratio": repr(self.search_cache_budget_gb_ratio),
        }

    def build_threads(self, granted: int) -> int:
        """The threads a build uses when ``granted`` are available (at least one)."""
        return max(1, math.floor(granted * self.num_build_thread_ratio))


def diskann_params(raw: Raw) -> DiskannParams:
    """DISKANN's build parameters from a ``CreateIndex`` request's params."""
    return DiskannParams(
        max_degree=int_param(raw, "max_degree", DEFAULT_MAX_DEGREE, MAX_DEGREE_RANGE),
        search_list_size=int_param(raw, "search_list_size", DEFAULT_SEARCH_LIST_SIZE, SEARCH_LIST_SIZE_RANGE),
        pq_code_budget_gb_ratio=_ratio(raw, "pq_code_budget_gb_ratio", DEFAULT_PQ_CODE_BUDGET_GB_RATIO,
                                       low_open=True, high=0.25, high_open=False),
        num_build_thread_ratio=_ratio(raw, "num_build_thread_ratio", DEFAULT_NUM_BUILD_THREAD_RATIO,
                                      low_open=True, high=1.0, high_open=False),
        search_cache_budget_gb_ratio=_ratio(raw, "search_cache_budget_gb_ratio",
                                            DEFAULT_SEARCH_CACHE_BUDGET_GB_RATIO,
                                            low_open=False, high=0.3, high_open=True),
    )


def _ratio(raw: Raw, key: str, default: float, *, low_open: bool, high: float, high_open: bool) -> float:
    """``raw[key]`` as a float in ``(0 or [0, high] or high)`` (``default`` when absent)."""
    value = raw.get(key)
    if value is None:
        return default
    parsed = _as_float(value)
    interval = f"{'(' if low_open else '['}0, {high}{')' if high_open else ']'}"
    if parsed is None:
        raise InvalidArgument(f"invalid index params: {key} must be a number in {interval}, got {value!r}")
    above_low = parsed > 0 if low_open else parsed >= 0
    below_high = parsed < high if high_open else parsed <= high
    if not (above_low and below_high):
        raise InvalidArgument(f"invalid index params: {key} must be in {interval}, got {parsed}")
    return parsed


def _as_float(raw: object) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            return None
    else:
        return None
    return value if math.isfinite(value) else None
