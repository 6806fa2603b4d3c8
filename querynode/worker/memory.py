"""Giving a released segment's memory back to the system.

A worker's segments are large: their rows (Arrow buffers, numpy matrices) and
their indexes (hnswlib's and faiss's own allocations). Once a segment is
released, both allocators keep the freed pages by default: Arrow's pool
(mimalloc) until ``release_unused``, and glibc's malloc, whose heap arenas
only shrink from their top and whose mmap threshold grows after large frees,
until ``malloc_trim``. Without them a query node's resident memory stays at
its high-water mark after a ``drop_collection`` or ``release_collection``.
Measured with a standalone over 5 cycles of create, insert 50k x 128, HNSW,
load, search, drop (2026-11-27, a probe script): the process tree's RSS
after each drop was 587 / 678 / 766 / 809 / 701 MiB without, 465 / 488 /
560 / 578 / 568 MiB with this run after each release (356 MiB at start; the
rest of the growth is not located yet).

``malloc_trim`` walks the heap under malloc's lock, so it runs in a thread,
once per release call, not per segment.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable

import pyarrow as pa


def _load_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim  # glibc only
    except (OSError, AttributeError):
        return None  # another libc (musl): nothing to trim with
    return trim


_MALLOC_TRIM = _load_trim()


def give_back_memory() -> None:
    """Collect cycles, then return freed pages of Arrow's pool and of malloc to the system (blocking)."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
