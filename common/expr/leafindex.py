"""The seam through which ``evaluate`` asks indexes for leaf predicates instead of reading columns.

A segment with scalar indexes hands ``evaluate`` a ``LeafIndex``
(``segcore/index/scalar/planner.py``); the evaluator asks it for each leaf
(``Compare``, ``InList``, ``Like``, ``JsonContains``, and ``TextMatch``: a sealed
segment's text-match index) before it reads any column for that leaf. The answer is the leaf's value per row *before* null
handling, exactly what the scan computes for it there: the evaluator still
makes rows unknown where a column the leaf reads is null, and combines
leaves with ``not``/``and``/``or`` in three-valued logic.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from common.expr.ast import Expr


class LeafIndex(Protocol):
    def leaf(self, expr: Expr) -> np.ndarray | None:
        """``bool`` per row for the leaf ``expr``, or ``None`` when no index covers it (it is scanned)."""
        ...
