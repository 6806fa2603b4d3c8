"""Primary key -> dense code maps used by the MVCC version chains.

Every distinct primary key of a store gets a code ``0, 1, 2, ...`` the first
time it is seen; codes never change, so per-key state can live in plain numpy
arrays indexed by code.

* :class:`IntPkIndex` (``INT64`` keys) is fully vectorised: keys live in
  sorted runs whose sizes shrink geometrically (a log-structured merge), so
  adding ``m`` keys costs amortised ``O(m log n)`` numpy work and a lookup is a
  ``searchsorted`` per run.
* :class:`StrPkIndex` (``VARCHAR`` keys) is a Python ``dict``. numpy has no
  fast variable-length string search (``searchsorted`` on object or
  ``StringDType`` arrays is several microseconds a key) and pyarrow only
  offers hash lookups that rebuild the table per call (``O(n)``), so a dict,
  ``O(batch)`` per call, is the cheapest incremental choice.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pyarrow as pa

from common.schema import DataType

#: Code returned by ``lookup`` for a key the index has never seen.
MISSING = -1


class PkIndex(Protocol):
    """Assigns stable dense codes to primary keys."""

    def __len__(self) -> int:
        """Number of distinct keys (= the next code to assign)."""
        ...

    def lookup(self, pks: pa.Array) -> np.ndarray:
        """int64 code of each key, :data:`MISSING` for unknown keys. Adds nothing."""
        ...

    def add(self, pks: pa.Array) -> np.ndarray:
        """int64 code of each key, assigning new codes to unseen keys."""
        ...


class IntPkIndex:
    """``INT64`` keys in sorted runs (vectorised)."""

    __slots__ = ("_runs", "_size")

    def __init__(self) -> None:
        # (sorted keys, their codes); run sizes decrease at least by half.
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def lookup(self, pks: pa.Array) -> np.ndarray:
        return self._lookup(_int_keys(pks))

    def add(self, pks: pa.Array) -> np.ndarray:
        keys = _int_keys(pks)
        codes = self._lookup(keys)
        missing = codes == MISSING
        if missing.any():
            new_keys, inverse = np.unique(keys[missing], return_inverse=True)
            new_codes = np.arange(self._size, self._size + len(new_keys), dtype=np.int64)
            codes[missing] = new_codes[inverse]
            self._size += len(new_keys)
            self._push_run(new_keys, new_codes)
        return codes

    def _lookup(self, keys: np.ndarray) -> np.ndarray:
        codes = np.full(len(keys), MISSING, dtype=np.int64)
        for run_keys, run_codes in self._runs:
            pos = np.minimum(np.searchsorted(run_keys, keys), len(run_keys) - 1)
            hit = run_keys[pos] == keys
            codes[hit] = run_codes[pos[hit]]
        return codes

    def _push_run(self, keys: np.ndarray, codes: np.ndarray) -> None:
        self._runs.append((keys, codes))
        # Merge while the previous run is not at least twice as large: keeps
        # O(log n) runs and copies each key O(log n) times overall.
        while len(self._runs) >= 2 and len(self._runs[-2][0]) <= 2 * len(self._runs[-1][0]):
            newer_keys, newer_codes = self._runs.pop()
            older_keys, older_codes = self._runs.pop()
            merged_keys = np.concatenate([older_keys, newer_keys])
            order = np.argsort(merged_keys, kind="stable")  # two sorted runs: ~linear
            merged_codes = np.concatenate([older_codes, newer_codes])
            self._runs.append((merged_keys[order], merged_codes[order]))


class StrPkIndex:
    """``VARCHAR`` keys in a dict."""

    __slots__ = ("_codes",)

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._codes)

    def lookup(self, pks: pa.Array) -> np.ndarray:
        get = self._codes.get
        keys = pks.to_pylist()
        return np.fromiter((get(k, MISSING) for k in keys), dtype=np.int64, count=len(keys))

    def add(self, pks: pa.Array) -> np.ndarray:
        codes = self._codes
        keys = pks.to_pylist()
        # setdefault evaluates len(codes) before inserting: the next free code.
        return np.fromiter(
            (codes.setdefault(k, len(codes)) for k in keys), dtype=np.int64, count=len(keys)
        )


def make_pk_index(dtype: DataType) -> PkIndex:
    """The index for a primary key of ``dtype`` (``INT64`` or ``VARCHAR``)."""
    match dtype:
        case DataType.INT64:
            return IntPkIndex()
        case DataType.VARCHAR:
            return StrPkIndex()
        case _:
            raise ValueError(f"primary key type {dtype.name} is not supported")


def _int_keys(pks: pa.Array) -> np.ndarray:
    return np.asarray(pks.to_numpy(zero_copy_only=False), dtype=np.int64)
