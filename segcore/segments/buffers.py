"""Append-only numpy buffers that grow by doubling.

A growing segment receives rows in many small batches. Re-concatenating its
arrays on every batch (or every search) would cost O(n) each time; these
buffers reserve spare capacity instead, so appends are amortised O(batch) and
``view()`` is a zero-copy slice of the filled prefix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_MIN_CAPACITY = 64


class GrowableArray:
    """A numpy array of rows (1-D, or 2-D with a fixed ``width``) that grows in place.

    ``view()`` returns the filled prefix as a view of the current buffer. A
    view taken before a growth keeps pointing at the old buffer, so callers
    should not hold views across appends when they also write through them.
    """

    __slots__ = ("_data", "_len")

    def __init__(self, dtype: Any, *, width: int | None = None) -> None:
        shape: tuple[int, ...] = (0,) if width is None else (0, width)
        self._data: np.ndarray = np.empty(shape, dtype=dtype)
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def view(self) -> np.ndarray:
        """The filled rows, as a (writable) view of the buffer."""
        return self._data[: self._len]

    def append(self, values: np.ndarray) -> None:
        """Copy ``values`` (rows shaped like this buffer's rows) after the filled prefix."""
        count = len(values)
        self.reserve(self._len + count)
        self._data[self._len : self._len + count] = values
        self._len += count

    def extend_filled(self, count: int, fill: Any) -> None:
        """Append ``count`` rows all equal to ``fill``."""
        self.reserve(self._len + count)
        self._data[self._len : self._len + count] = fill
        self._len += count

    def move_to_file(self, path: str) -> None:
        """Keep the filled rows in a new file at ``path``, mapped read-only, instead of in memory.

        For a sealed column that gets no more rows: the pages are read on demand
        and the kernel may drop them again. ``path`` must not exist. A later
        append copies the rows back into memory.
        """
        filled = np.ascontiguousarray(self.view())
        with open(path, "xb") as out:
            filled.tofile(out)
        if len(filled) == 0:
            return
        self._data = np.memmap(path, dtype=filled.dtype, mode="r", shape=filled.shape)

    @property
    def on_file(self) -> bool:
        """The rows live in a mapped file (``move_to_file``)."""
        return isinstance(self._data, np.memmap)

    def reserve(self, capacity: int) -> None:
        """Make room for ``capacity`` rows, at least doubling when it must grow."""
        current = self._data.shape[0]
        if capacity <= current:
            return
        new_capacity = max(capacity, 2 * current, _MIN_CAPACITY)
        grown = np.empty((new_capacity, *self._data.shape[1:]), dtype=self._data.dtype)
        grown[: self._len] = self._data[: self._len]
        self._data = grown
