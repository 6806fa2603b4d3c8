"""Which shard (vchannel) a primary key belongs to, exactly as Milvus hashes it.

int64: murmur3-32 (seed 0) of the 8 little-endian bytes, masked to 31 bits.
varchar: CRC32 (IEEE) of the first 100 bytes of the UTF-8 string.
Then the hash modulo the number of shards.
"""

from __future__ import annotations

import zlib

import mmh3
import numpy as np
import pyarrow as pa

_MASK31 = 0x7FFFFFFF


def hash_int64(pk: int) -> int:
    return mmh3.hash(int(pk).to_bytes(8, "little", signed=True), 0, signed=False) & _MASK31


def hash_varchar(pk: str) -> int:
    return zlib.crc32(pk.encode()[:100])


def shard_indices(pks: pa.Array, shards: int) -> np.ndarray:
    """Shard index of every primary key."""
    if shards == 1:
        return np.zeros(len(pks), dtype=np.int64)
    values = pks.to_pylist()
    if pa.types.is_integer(pks.type):
        hashes = [hash_int64(v) for v in values]
    else:
        hashes = [hash_varchar(v) for v in values]
    return np.asarray(hashes, dtype=np.int64) % shards
