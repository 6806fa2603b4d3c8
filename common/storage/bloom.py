"""A bloom filter over primary keys, vectorised with numpy, with a stable byte format.

Promises: no false negatives; a false-positive rate near the ``fp_rate`` it was
sized for; the same bits for the same keys in every process and every version
(the hash functions below are part of the file format, see README.md).

Hashing of one key to a 64-bit value ``x``:

* INT64 key: ``x`` = the key's two's-complement bit pattern as uint64;
* VARCHAR key: ``x`` = 64-bit FNV-1a over the key's UTF-8 bytes
  (offset basis ``0xCBF29CE484222325``, prime ``0x100000001B3``).

Then ``h1 = mix(x)``, ``h2 = mix(x ^ 0x9E3779B97F4A7C15) | 1`` where ``mix`` is the
splitmix64 finalizer, and the key sets bits ``(h1 + i*h2) mod m`` for ``i < k``
(arithmetic modulo 2**64 before the ``mod m``).
"""

from __future__ import annotations

import math
import struct

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from common.errors import InvalidArgument
from common.schema import DataType
from common.storage.errors import CorruptObject

U64Array = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]

MAGIC = b"SPBF"
FORMAT_VERSION = 1
MIN_BITS = 64
MAX_HASHES = 32
#: magic, format version, key type (Milvus DataType number), reserved, k, m, keys inserted.
_HEADER = struct.Struct("<4sBBHIQQ")

FNV_OFFSET_BASIS = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)
SECOND_HASH_XOR = np.uint64(0x9E3779B97F4A7C15)
_MIX_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_MUL2 = np.uint64(0x94D049BB133111EB)

# Keys hashed per numpy step: bounds the (keys x k) position matrix to a few MB.
_CHUNK = 1 << 16


def splitmix64(x: U64Array) -> U64Array:
    """The splitmix64 finalizer, element-wise (uint64 arithmetic wraps)."""
    with np.errstate(over="ignore"):
        z = np.array(x, dtype=np.uint64, copy=True)
        z ^= z >> np.uint64(30)
        z *= _MIX_MUL1
        z ^= z >> np.uint64(27)
        z *= _MIX_MUL2
        z ^= z >> np.uint64(31)
    return z


def fnv1a64(strings: pa.Array) -> U64Array:
    """64-bit FNV-1a of each string's UTF-8 bytes, vectorised over keys.

    Walks byte positions, not keys: at position ``p`` every key longer than ``p``
    absorbs its ``p``-th byte in one numpy step (keys sorted longest first, so the
    active keys are a prefix).
    """
    arr = _plain_strings(strings)
    n = len(arr)
    hashes = np.full(n, FNV_OFFSET_BASIS, dtype=np.uint64)
    if n == 0:
        return hashes
    buffers = arr.buffers()
    offset_type = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(buffers[1], dtype=offset_type)[arr.offset : arr.offset + n + 1].astype(np.int64)
    data = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0, np.uint8)
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    order = np.argsort(-lengths, kind="stable")
    neg_lengths = -lengths[order]  # ascending
    sorted_starts = starts[order]
    work = hashes[order]
    with np.errstate(over="ignore"):
        for pos in range(int(lengths.max())):
            active = int(np.searchsorted(neg_lengths, -pos, side="left"))  # keys with length > pos
            head = work[:active]
            head ^= data[sorted_starts[:active] + pos]
            head *= FNV_PRIME
    hashes[order] = work
    return hashes


def key_type_of(pks: pa.Array | pa.ChunkedArray) -> DataType:
    """INT64 for integer arrays, VARCHAR for string arrays; anything else is refused."""
    if pa.types.is_integer(pks.type):
        return DataType.INT64
    if pa.types.is_string(pks.type) or pa.types.is_large_string(pks.type) or pa.types.is_string_view(pks.type):
        return DataType.VARCHAR
    raise InvalidArgument(f"primary keys must be integers or strings, got Arrow type {pks.type}")


def key_values(pks: pa.Array | pa.ChunkedArray) -> tuple[DataType, U64Array]:
    """The key type and each key's 64-bit value ``x`` before mixing (see the module docstring)."""
    key_type = key_type_of(pks)
    if pks.null_count:
        raise InvalidArgument("primary keys must not be null")
    if key_type == DataType.INT64:
        ints = pks.cast(pa.int64()) if pks.type != pa.int64() else pks
        if isinstance(ints, pa.ChunkedArray):
            ints = ints.combine_chunks()
        values = np.asarray(ints.to_numpy(zero_copy_only=False), dtype=np.int64).view(np.uint64)
        return key_type, values
    return key_type, fnv1a64(pks)


def _plain_strings(strings: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    if pa.types.is_string_view(strings.type):
        strings = strings.cast(pa.string())
    if not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        raise InvalidArgument(f"expected a string array, got Arrow type {strings.type}")
    return strings


def optimal_size(n: int, fp_rate: float) -> tuple[int, int]:
    """``(m, k)``: bits (a multiple of 64, at least 64) and hash count for ``n`` keys at ``fp_rate``."""
    if not 0.0 < fp_rate < 1.0:
        raise InvalidArgument(f"bloom filter false-positive rate must be in (0, 1), got {fp_rate}")
    if n <= 0:
        return MIN_BITS, 1
    bits = math.ceil(-n * math.log(fp_rate) / (math.log(2) ** 2))
    bits = max(MIN_BITS, (bits + 63) // 64 * 64)
    hashes = max(1, min(MAX_HASHES, round(bits / n * math.log(2))))
    return bits, hashes


class PkBloomFilter:
    """An immutable bloom filter over one segment's (or one insert log's) primary keys."""

    __slots__ = ("_bits", "_count", "_key_type", "_m", "_k")

    def __init__(self, *, key_type: DataType, num_bits: int, num_hashes: int, count: int, bits: bytes) -> None:
        """Wrap already-computed bits (``num_bits / 8`` bytes, bit ``i`` = byte ``i >> 3``, bit ``i & 7``).

        Prefer ``build`` and ``from_bytes``.
        """
        if key_type not in (DataType.INT64, DataType.VARCHAR):
            raise InvalidArgument(f"bloom filter key type must be INT64 or VARCHAR, got {key_type!r}")
        if num_bits < MIN_BITS or num_bits % 64 or not 1 <= num_hashes <= MAX_HASHES or count < 0:
            raise InvalidArgument(f"bad bloom filter shape m={num_bits} k={num_hashes} n={count}")
        if len(bits) != num_bits // 8:
            raise InvalidArgument(f"bloom filter of {num_bits} bits needs {num_bits // 8} bytes, got {len(bits)}")
        self._key_type = DataType(key_type)
        self._m = num_bits
        self._k = num_hashes
        self._count = count
        array = np.frombuffer(bits, dtype=np.uint8).copy()
        array.setflags(write=False)
        self._bits = array

    @staticmethod
    def build(pks: pa.Array | pa.ChunkedArray, *, fp_rate: float = 0.001) -> PkBloomFilter:
        """A filter holding every key of ``pks`` (INT64 or VARCHAR, no nulls), sized for ``fp_rate``."""
        key_type, values = key_values(pks)
        m, k = optimal_size(len(values), fp_rate)
        set_bits = np.zeros(m, dtype=np.bool_)
        for start in range(0, len(values), _CHUNK):
            set_bits[_positions(values[start : start + _CHUNK], m, k).ravel()] = True
        packed = np.packbits(set_bits, bitorder="little")
        return PkBloomFilter(key_type=key_type, num_bits=m, num_hashes=k, count=len(values), bits=packed.tobytes())

    @property
    def key_type(self) -> DataType:
        return self._key_type

    @property
    def num_bits(self) -> int:
        return self._m

    @property
    def num_hashes(self) -> int:
        return self._k

    @property
    def count(self) -> int:
        """How many keys were inserted (duplicates counted)."""
        return self._count

    def may_contain(self, pks: pa.Array | pa.ChunkedArray) -> BoolArray:
        """One bool per key: False means the key was certainly never inserted.

        Raises:
            InvalidArgument: the keys' type differs from the filter's, or a key is null.
        """
        key_type, values = key_values(pks)
        if key_type != self._key_type:
            raise InvalidArgument(f"bloom filter holds {self._key_type.name} keys, asked about {key_type.name} keys")
        result = np.empty(len(values), dtype=np.bool_)
        for start in range(0, len(values), _CHUNK):
            pos = _positions(values[start : start + _CHUNK], self._m, self._k)
            hit = (self._bits[pos >> np.uint64(3)] >> (pos & np.uint64(7)).astype(np.uint8)) & np.uint8(1)
            result[start : start + len(pos)] = hit.all(axis=1)
        return result

    def to_bytes(self) -> bytes:
        """The byte format documented in README.md: a 28-byte header, then the bits."""
        header = _HEADER.pack(MAGIC, FORMAT_VERSION, int(self._key_type), 0, self._k, self._m, self._count)
        return header + self._bits.tobytes()

    @staticmethod
    def from_bytes(data: bytes) -> PkBloomFilter:
        """Inverse of ``to_bytes``. Raises ``CorruptObject`` on anything malformed."""
        if len(data) < _HEADER.size:
            raise CorruptObject(f"bloom filter is {len(data)} bytes, shorter than its header")
        magic, version, key_type, _reserved, k, m, count = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise CorruptObject(f"not a bloom filter (magic {magic!r})")
        if version != FORMAT_VERSION:
            raise CorruptObject(f"unsupported bloom filter format version {version}")
        if key_type not in (DataType.INT64, DataType.VARCHAR):
            raise CorruptObject(f"bloom filter has unknown key type {key_type}")
        try:
            return PkBloomFilter(
                key_type=DataType(key_type), num_bits=m, num_hashes=k, count=count, bits=bytes(data[_HEADER.size :])
            )
        except InvalidArgument as err:
            raise CorruptObject(f"malformed bloom filter: {err.message}") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PkBloomFilter):
            return NotImplemented
        return (self._key_type, self._m, self._k, self._count) == (
            other._key_type,
            other._m,
            other._k,
            other._count,
        ) and bool(np.array_equal(self._bits, other._bits))

    __hash__ = None  # type: ignore[assignment]  # equal by value, yet not meant as a dict key

    def __repr__(self) -> str:
        return f"PkBloomFilter(key_type={self._key_type.name}, m={self._m}, k={self._k}, count={self._count})"


def _positions(values: U64Array, m: int, k: int) -> U64Array:
    """The ``(len(values), k)`` bit positions of each key value."""
    h1 = splitmix64(values)
    h2 = splitmix64(values ^ SECOND_HASH_XOR) | np.uint64(1)
    steps = np.arange(k, dtype=np.uint64)
    with np.errstate(over="ignore"):
        combined = h1[:, None] + steps[None, :] * h2[:, None]
    return combined % np.uint64(m)
