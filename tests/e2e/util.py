"""Helpers for end-to-end tests: unique names, reference search with numpy."""

from __future__ import annotations

import itertools
import os

import numpy as np

_counter = itertools.count()


def unique_name(prefix: str = "c") -> str:
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


def brute_force(data: np.ndarray, queries: np.ndarray, metric: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k row indices and Milvus-convention distances, best first."""
    if metric == "L2":
        d = ((queries[:, None, :] - data[None, :, :]) ** 2).sum(-1)
        order = np.argsort(d, axis=1, kind="stable")[:, :k]
    elif metric == "IP":
        d = queries @ data.T
        order = np.argsort(-d, axis=1, kind="stable")[:, :k]
    else:
        qn = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        dn = data / np.linalg.norm(data, axis=1, keepdims=True)
        d = qn @ dn.T
        order = np.argsort(-d, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(d, order, axis=1)
