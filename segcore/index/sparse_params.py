"""Build and search parameters of the sparse index kinds, with Milvus 2.6's (knowhere's) names, defaults and ranges.

Build (``create_index`` params):

* ``inverted_index_algo``: ``TAAT_NAIVE``, ``DAAT_WAND`` or ``DAAT_MAXSCORE``
  (default; ``SPARSE_WAND`` defaults to ``DAAT_WAND``);
* ``drop_ratio_build``: in [0, 1), default 0: the share of the segment's
  smallest values left out of the index.

Search (``search_params``): ``drop_ratio_search`` in [0, 1), default 0 (the
share of each query's smallest values ignored), and ``dim_max_score_ratio``
in [0.5, 1.3], default 1.05 (DAAT_MAXSCORE scales each posting list's max
score by it: below 1 it prunes more and may miss hits). ``bm25_k1``,
``bm25_b`` and ``bm25_avgdl`` belong to the BM25 metric of full-text search,
which a plain sparse field does not have.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import InvalidArgument

DROP_RATIO_RANGE = (0.0, 1.0)  # [low, high)
DIM_MAX_SCORE_RATIO_RANGE = (0.5, 1.3)  # [low, high]
DEFAULT_DIM_MAX_SCORE_RATIO = 1.05


class InvertedIndexAlgo(enum.Enum):
    """How a sparse inverted index walks its posting lists."""

    TAAT_NAIVE = "TAAT_NAIVE"  # term at a time: every posting of every query term scored
    DAAT_WAND = "DAAT_WAND"  # document at a time, skipping documents whose upper bound cannot enter the top k
    DAAT_MAXSCORE = "DAAT_MAXSCORE"  # only documents in the essential lists are candidates


@dataclass(frozen=True, slots=True, kw_only=True)
class SparseBuildParams:
    algo: InvertedIndexAlgo = InvertedIndexAlgo.DAAT_MAXSCORE
    drop_ratio_build: float = 0.0

    def canonical(self) -> dict[str, int | str | bool]:
        # The ratio as its repr: an index's meta holds integers, strings and booleans only.
        return {"inverted_index_algo": self.algo.value, "drop_ratio_build": repr(self.drop_ratio_build)}


def sparse_build_params(kind_name: str, params: Mapping[str, str | int | float]) -> SparseBuildParams:
    """The build parameters of ``SPARSE_INVERTED_INDEX`` / ``SPARSE_WAND`` (``kind_name``), checked."""
    default = InvertedIndexAlgo.DAAT_WAND if kind_name == "SPARSE_WAND" else InvertedIndexAlgo.DAAT_MAXSCORE
    raw = params.get("inverted_index_algo", default.value)
    try:
        algo = InvertedIndexAlgo(str(raw).upper()) if isinstance(raw, str) else None
    except ValueError:
        algo = None
    if algo is None:
        supported = " ".join(a.value for a in InvertedIndexAlgo)
        raise InvalidArgument(f"sparse inverted index algo {raw} not found or not supported, supported: [{supported}]")
    ratio = ratio_param(params, "drop_ratio_build")
    return SparseBuildParams(algo=algo, drop_ratio_build=0.0 if ratio is None else ratio)


def ratio_param(params: Mapping[str, object], key: str) -> float | None:
    """A drop ratio in [0, 1) (None when absent); ``InvalidArgument`` in knowhere's words otherwise."""
    if key not in params or params[key] is None:
        return None
    value = number(params[key])
    low, high = DROP_RATIO_RANGE
    if value is None or not low <= value < high:
        raise InvalidArgument(f"param '{key}' ({params[key]}) should be in range [{low}, {high})")
    return value


def score_ratio_param(params: Mapping[str, object]) -> float | None:
    """``dim_max_score_ratio`` in [0.5, 1.3] (None when absent)."""
    key = "dim_max_score_ratio"
    if key not in params or params[key] is None:
        return None
    value = number(params[key])
    low, high = DIM_MAX_SCORE_RATIO_RANGE
    if value is None or not low <= value <= high:
        raise InvalidArgument(f"param '{key}' ({params[key]}) should be in range [{low}, {high}]")
    return value


def number(raw: object) -> float | None:
    """``raw`` as a finite float (ints, floats, decimal strings), else None."""
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


def check_sparse_search(drop_ratio_search: float | None, dim_max_score_ratio: float | None) -> None:
    """``InvalidArgument`` unless the sparse search parameters are in range (None: absent)."""
    ratio_param({"drop_ratio_search": drop_ratio_search}, "drop_ratio_search")
    score_ratio_param({"dim_max_score_ratio": dim_max_score_ratio})
