"""Which vchannel (shard), partition and segment bucket an imported row goes to.

The shard of a key is the proxy's (``common/routing.py``): murmur3-32
(seed 0) of the int64 key's 8 little-endian bytes, masked to 31 bits, or CRC32
of the first 100 bytes of a VARCHAR key, modulo the shard count. Here the int64
hash is vectorised with numpy (one pass over a million keys takes tens of
milliseconds instead of seconds); the tests pin it to ``mmh3``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from common.routing import hash_varchar

_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_M = np.uint32(5)
_N = np.uint32(0xE6546B64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_int64(keys: np.ndarray) -> np.ndarray:
    """murmur3_x86_32 (seed 0) of each int64's 8 little-endian bytes, as uint32."""
    raw = np.ascontiguousarray(keys, dtype="<i8").view("<u4").reshape(-1, 2)
    h = np.zeros(len(raw), dtype=np.uint32)
    with np.errstate(over="ignore"):
        for block in (raw[:, 0], raw[:, 1]):
            k = block.astype(np.uint32) * _C1
            k = _rotl(k, 15) * _C2
            h ^= k
            h = _rotl(h, 13) * _M + _N
        h ^= np.uint32(8)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h


def key_hashes(pks: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The routing hash of every primary key (31 bits for int64 keys, CRC32 for VARCHAR keys), as int64."""
    if isinstance(pks, pa.ChunkedArray):
        pks = pks.combine_chunks()
    if pa.types.is_integer(pks.type):
        values = np.asarray(pks.to_numpy(zero_copy_only=False), dtype=np.int64)
        return (murmur3_int64(values) & np.uint32(0x7FFFFFFF)).astype(np.int64)
    return np.asarray([hash_varchar(v) for v in pks.to_pylist()], dtype=np.int64)


def shards_of(pks: pa.Array | pa.ChunkedArray, shards: int) -> np.ndarray:
    """Shard index of every key, as the proxy routes inserts."""
    if shards == 1:
        return np.zeros(len(pks), dtype=np.int64)
    return key_hashes(pks) % shards


def buckets_of(pks: pa.Array | pa.ChunkedArray, shards: int, buckets: int) -> np.ndarray:
    """A segment bucket per key in ``[0, buckets)``, independent of its shard (the hash's higher part)."""
    if buckets == 1:
        return np.zeros(len(pks), dtype=np.int64)
    return (key_hashes(pks) // max(1, shards)) % buckets
