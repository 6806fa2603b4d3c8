"""Sorted posting lists: every distinct value of a column and the rows holding it.

``Postings`` is the one structure behind every scalar index kind: the
distinct values (``keys``) in ascending order, and for each key the rows
holding it, grouped by key in ``rows`` (``offsets[i]:offsets[i + 1]``). An
equality is a binary search and one slice of ``rows``; a range is two binary
searches and one slice (the rows of consecutive keys are contiguous); ``in``
is a slice per value; a predicate on the keys alone (``like``) is evaluated
once per distinct value and expanded to rows. No lookup reads the column.

Keys are ``int64`` (integer columns), ``float64`` (floating ones; NaN rows
kept apart, in ``nan_rows``: they equal and order with nothing), ``bool`` or
strings (a numpy object array, in code-point order, which is the order of
Python's ``<`` and of Arrow's byte-wise UTF-8 sort). A row may appear under
several keys (ARRAY elements) and under one key several times (``[1, 1]``).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROW_DTYPE = np.int64


@dataclass(frozen=True, slots=True, kw_only=True)
class Postings:
    keys: np.ndarray
    offsets: np.ndarray  # int64, len(keys) + 1
    rows: np.ndarray  # row ids grouped by key
    nan_rows: np.ndarray  # rows holding NaN (floating keys only)
    num_rows: int  # rows of the segment (the length of every mask)
    string_keys: pa.Array | None = None  # the string keys as Arrow, for vectorised ``like``

    @property
    def is_string(self) -> bool:
        return self.string_keys is not None

    # ---------------------------------------------------------------- lookups

    def key_span(self, low: Any, high: Any, *, low_inclusive: bool, high_inclusive: bool) -> tuple[int, int]:
        """The key positions ``[lo, hi)`` of keys within the bounds (``None``: unbounded)."""
        keys = self.keys
        lo = 0 if low is None else int(np.searchsorted(keys, low, side="left" if low_inclusive else "right"))
        hi = len(keys) if high is None else int(np.searchsorted(keys, high, side="right" if high_inclusive else "left"))
        return lo, max(lo, hi)

    def span_rows(self, lo: int, hi: int) -> np.ndarray:
        return self.rows[self.offsets[lo] : self.offsets[hi]]

    def equal_rows(self, value: Any) -> np.ndarray:
        return self.span_rows(*self.key_span(value, value, low_inclusive=True, high_inclusive=True))

    def mask(self, rows: np.ndarray | Iterable[np.ndarray]) -> np.ndarray:
        """A ``bool`` per segment row: set where a row of ``rows`` is."""
        out = np.zeros(self.num_rows, dtype=bool)
        if isinstance(rows, np.ndarray):
            out[rows] = True
        else:
            for part in rows:
                out[part] = True
        return out

    def key_mask_rows(self, key_mask: np.ndarray) -> np.ndarray:
        """The rows of every key where ``key_mask`` is set."""
        if not key_mask.any():
            return self.rows[:0]
        counts = np.diff(self.offsets)
        return self.rows[np.repeat(key_mask, counts)]

    def keys_matching(self, predicate: Callable[[pa.Array], pa.Array]) -> np.ndarray:
        """``bool`` per key: ``predicate`` over the string keys (vectorised, Arrow)."""
        assert self.string_keys is not None
        return np.asarray(pc.fill_null(predicate(self.string_keys), False).to_numpy(zero_copy_only=False), dtype=bool)

    # ---------------------------------------------------------- persistence

    def to_bytes(self) -> bytes:
        arrays: dict[str, np.ndarray] = {
            "offsets": self.offsets,
            "rows": self.rows,
            "nan_rows": self.nan_rows,
            "num_rows": np.array([self.num_rows], dtype=np.int64),
        }
        if self.string_keys is not None:
            sink = pa.BufferOutputStream()
            batch = pa.record_batch([self.string_keys], names=["keys"])
            with pa.ipc.new_stream(sink, batch.schema) as writer:
                writer.write_batch(batch)
            arrays["string_keys"] = np.frombuffer(sink.getvalue().to_pybytes(), dtype=np.uint8)
        else:
            arrays["keys"] = self.keys
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, payload: bytes) -> Postings:
        with np.load(io.BytesIO(payload), allow_pickle=False) as data:
            string_keys = None
            if "string_keys" in data:
                reader = pa.ipc.open_stream(pa.py_buffer(data["string_keys"].tobytes()))
                string_keys = reader.read_all().column("keys").combine_chunks()
                keys = np.asarray(string_keys.to_numpy(zero_copy_only=False), dtype=object)
            else:
                keys = data["keys"]
            return cls(
                keys=keys,
                offsets=data["offsets"],
                rows=data["rows"],
                nan_rows=data["nan_rows"],
                num_rows=int(data["num_rows"][0]),
                string_keys=string_keys,
            )


def build_postings(values: pa.Array, rows: np.ndarray, num_rows: int) -> Postings:
    """The postings of ``values`` (no nulls), ``rows[i]`` holding ``values[i]``.

    Integers become ``int64`` keys, floats ``float64`` (``-0.0`` and ``0.0`` one key), booleans
    ``bool``, strings Arrow ``string`` (large strings are narrowed).
    """
    rows = np.asarray(rows, dtype=ROW_DTYPE)
    kind = values.type
    nan_rows = np.empty(0, dtype=ROW_DTYPE)
    if pa.types.is_integer(kind):
        values = values.cast(pa.int64())
    elif pa.types.is_floating(kind):
        values = values.cast(pa.float64())
        nan = np.asarray(pc.is_nan(values).to_numpy(zero_copy_only=False), dtype=bool)
        if nan.any():
            nan_rows = rows[nan]
            keep = ~nan
            values, rows = values.filter(pa.array(keep)), rows[keep]
        values = pc.add(values, 0.0)  # -0.0 -> 0.0: one key for values that compare equal
    elif pa.types.is_large_string(kind):
        values = values.cast(pa.string())
    if len(values) == 0:
        empty_keys = pa.array([], type=values.type)
        string = pa.types.is_string(values.type)
        return Postings(
            keys=np.asarray(empty_keys.to_numpy(zero_copy_only=False), dtype=object if string else None),
            offsets=np.zeros(1, dtype=np.int64),
            rows=rows[:0],
            nan_rows=nan_rows,
            num_rows=num_rows,
            string_keys=empty_keys if string else None,
        )
    # Sorted by value, then by row within a value (a stable sort of row-ordered input).
    order = np.asarray(pc.sort_indices(values).to_numpy(), dtype=np.int64)
    ordered = values.take(pa.array(order))
    sorted_rows = rows[order]
    changes = np.asarray(
        pc.not_equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1)).to_numpy(zero_copy_only=False), dtype=bool
    )
    starts = np.concatenate(([0], np.flatnonzero(changes) + 1)).astype(np.int64)
    offsets = np.append(starts, len(ordered)).astype(np.int64)
    unique = ordered.take(pa.array(starts))
    if pa.types.is_string(unique.type):
        keys = np.asarray(unique.to_numpy(zero_copy_only=False), dtype=object)
        return Postings(keys=keys, offsets=offsets, rows=sorted_rows, nan_rows=nan_rows, num_rows=num_rows,
                        string_keys=unique)
    keys = np.asarray(unique.to_numpy(zero_copy_only=False))
    return Postings(keys=keys, offsets=offsets, rows=sorted_rows, nan_rows=nan_rows, num_rows=num_rows)
