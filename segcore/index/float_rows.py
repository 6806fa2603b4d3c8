"""The rows a faiss structure is trained on and filled with, as float32, a chunk at a time.

faiss takes float32 rows. A ``FLOAT_VECTOR`` segment's matrix is handed over
as it is (one piece, normalised once for COSINE, exactly as before narrow types
existed). The narrow rows of a FLOAT16, BFLOAT16 or INT8 field
(``common/narrow_vectors.py``) are converted per chunk while the structure
is filled, and training sees at most ``TRAIN_SAMPLE_ROWS`` rows spread evenly
over the segment (faiss' k-means samples at most 256 rows per centroid anyway),
so a build never holds a float32 copy of a whole narrow segment.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import faiss as faiss_module
import numpy as np

from common.narrow_vectors import float_chunks, to_float32
from segcore.segments.metric import Metric

faiss: Any = faiss_module

#: Most narrow rows converted for training (256 per list of the largest nlist knowhere
#: lets a segment this size have; 128 MiB of float32 at dim 128).
TRAIN_SAMPLE_ROWS = 256 * 1024
#: Narrow elements converted per chunk while filling: 64 MiB of float32.
FILL_CHUNK_CELLS = 16 * 1024 * 1024


class FloatRows:
    """``matrix`` (float32 or narrow) as float32 rows, unit rows for COSINE."""

    def __init__(self, matrix: np.ndarray, metric: Metric, *, sample_rows: int = TRAIN_SAMPLE_ROWS) -> None:
        self._matrix = matrix
        self._metric = metric
        self._sample_rows = sample_rows
        self._whole = _unit(metric, matrix) if matrix.dtype == np.float32 else None

    @property
    def shape(self) -> tuple[int, int]:
        return int(self._matrix.shape[0]), int(self._matrix.shape[1])

    def sample(self) -> np.ndarray:
        """The training rows: every row of a float32 matrix; of a narrow one, at most
        ``sample_rows`` rows at even steps (all of them when fewer)."""
        if self._whole is not None:
            return self._whole
        rows = len(self._matrix)
        if rows <= self._sample_rows:
            picked = self._matrix
        else:
            picked = self._matrix[np.linspace(0, rows - 1, self._sample_rows).astype(np.int64)]
        return _unit(self._metric, to_float32(picked))

    def chunks(self) -> Iterator[np.ndarray]:
        """Every row once, in order, as C-contiguous float32 pieces."""
        if self._whole is not None:
            yield self._whole
            return
        for _, chunk in float_chunks(self._matrix, FILL_CHUNK_CELLS):
            yield _unit(self._metric, chunk)


def _unit(metric: Metric, matrix: np.ndarray) -> np.ndarray:
    """Unit rows for COSINE (a copy; zero rows stay zero), else the rows as C-contiguous float32."""
    if metric is not Metric.COSINE:
        return np.ascontiguousarray(matrix, dtype=np.float32)
    out = np.array(matrix, dtype=np.float32, copy=True, order="C")
    faiss.normalize_L2(out)
    return out
