"""PkBloomFilter: no false negatives, the promised false-positive rate, a stable byte format.

``_reference_bits`` is a plain-Python, key-at-a-time transcription of the format in
README.md; the vectorised filter must agree with it bit for bit.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.errors import InvalidArgument
from common.schema import DataType
from common.storage import CorruptObject, PkBloomFilter
from common.storage.bloom import fnv1a64, optimal_size, splitmix64

M64 = (1 << 64) - 1
PROPERTY = settings(max_examples=60, deadline=None)


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _fnv(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & M64
    return h


def _reference_bits(key: int | str, m: int, k: int) -> list[int]:
    x = _fnv(key.encode("utf-8")) if isinstance(key, str) else key & M64
    h1 = _mix(x)
    h2 = _mix(x ^ 0x9E3779B97F4A7C15) | 1
    return [((h1 + i * h2) & M64) % m for i in range(k)]


# ---------------------------------------------------------------- hash functions


def test_hash_functions_match_published_vectors() -> None:
    # FNV-1a 64 test vectors (Fowler/Noll/Vo) and the first outputs of splitmix64 seeded with 0.
    assert [int(h) for h in fnv1a64(pa.array(["", "a", "foobar"]))] == [
        0xCBF29CE484222325,
        0xAF63DC4C8601EC8C,
        0x85944171F73967E8,
    ]
    gamma = 0x9E3779B97F4A7C15
    mixed = splitmix64(np.array([gamma, (2 * gamma) & M64], dtype=np.uint64))
    assert [int(h) for h in mixed] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]


@PROPERTY
@given(st.lists(st.text(max_size=40), max_size=30))
def test_vectorised_fnv_matches_the_scalar_definition(keys: list[str]) -> None:
    arr = pa.array(keys, pa.string())
    expected = [_fnv(k.encode("utf-8")) for k in keys]
    assert [int(h) for h in fnv1a64(arr)] == expected
    assert [int(h) for h in fnv1a64(arr.cast(pa.large_string()))] == expected
    if len(keys) > 2:  # sliced arrays start at an offset into the buffers
        assert [int(h) for h in fnv1a64(arr.slice(1, len(keys) - 2))] == expected[1:-1]


@PROPERTY
@given(
    st.one_of(
        st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=40),
        st.lists(st.text(max_size=20), min_size=1, max_size=40),
    )
)
def test_bits_match_the_documented_format(keys: list[int] | list[str]) -> None:
    bloom = PkBloomFilter.build(pa.array(keys))
    expected = bytearray(bloom.num_bits // 8)
    for key in keys:
        for bit in _reference_bits(key, bloom.num_bits, bloom.num_hashes):
            expected[bit >> 3] |= 1 << (bit & 7)
    assert bloom.to_bytes()[28:] == bytes(expected)


# ---------------------------------------------------------------- behaviour


@PROPERTY
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=300))
def test_no_false_negatives_int64(keys: list[int]) -> None:
    arr = pa.array(keys, pa.int64())
    assert PkBloomFilter.build(arr).may_contain(arr).all()


@PROPERTY
@given(st.lists(st.text(max_size=30), max_size=300))
def test_no_false_negatives_varchar(keys: list[str]) -> None:
    arr = pa.array(keys, pa.string())
    assert PkBloomFilter.build(arr).may_contain(arr).all()


@pytest.mark.parametrize("fp_rate", [0.001, 0.01])
def test_false_positive_rate_is_close_to_the_target(fp_rate: float) -> None:
    rng = np.random.default_rng(7)
    keys = rng.choice(np.iinfo(np.int64).max, size=200_000, replace=False).astype(np.int64)
    inserted, absent = pa.array(keys[:100_000]), pa.array(keys[100_000:])
    bloom = PkBloomFilter.build(inserted, fp_rate=fp_rate)
    assert bloom.may_contain(inserted).all()
    rate = float(bloom.may_contain(absent).mean())
    assert fp_rate / 2 < rate < fp_rate * 1.6

    words = pa.array([f"user-{i}" for i in range(100_000)])
    others = pa.array([f"user-{i}" for i in range(100_000, 200_000)])
    text_bloom = PkBloomFilter.build(words, fp_rate=fp_rate)
    assert text_bloom.may_contain(words).all()
    assert fp_rate / 2 < float(text_bloom.may_contain(others).mean()) < fp_rate * 1.6


def test_sizing_follows_the_classic_formulas() -> None:
    m, k = optimal_size(100_000, 0.001)
    assert m % 64 == 0 and m >= math.ceil(100_000 * math.log(1000) / math.log(2) ** 2)
    assert k == 10
    assert optimal_size(0, 0.001) == (64, 1)
    assert optimal_size(1, 0.5)[0] == 64
    for bad in (0.0, 1.0, -0.1, 2.0):
        with pytest.raises(InvalidArgument):
            optimal_size(10, bad)


def test_empty_filter_contains_nothing() -> None:
    bloom = PkBloomFilter.build(pa.array([], pa.int64()))
    assert bloom.num_bits == 64 and bloom.count == 0
    assert not bloom.may_contain(pa.array([0, 1, -1], pa.int64())).any()
    assert bloom.may_contain(pa.array([], pa.int64())).shape == (0,)


def test_chunked_and_narrow_integer_keys_hash_like_int64() -> None:
    bloom = PkBloomFilter.build(pa.chunked_array([[1, 2], [3]], pa.int64()))
    assert bloom.may_contain(pa.array([1, 2, 3], pa.int32())).all()


def test_key_type_mismatch_and_nulls_are_refused() -> None:
    bloom = PkBloomFilter.build(pa.array([1, 2, 3]))
    with pytest.raises(InvalidArgument, match="INT64"):
        bloom.may_contain(pa.array(["1"]))
    with pytest.raises(InvalidArgument, match="null"):
        bloom.may_contain(pa.array([1, None]))
    with pytest.raises(InvalidArgument, match="integers or strings"):
        PkBloomFilter.build(pa.array([1.5]))


# ---------------------------------------------------------------- byte format


def test_bytes_round_trip() -> None:
    for keys in (pa.array(range(1000)), pa.array([f"k{i}" for i in range(1000)]), pa.array([], pa.string())):
        bloom = PkBloomFilter.build(keys, fp_rate=0.01)
        again = PkBloomFilter.from_bytes(bloom.to_bytes())
        assert again == bloom
        assert again.key_type == (DataType.INT64 if pa.types.is_integer(keys.type) else DataType.VARCHAR)
        assert again.to_bytes() == bloom.to_bytes()
        assert again.may_contain(keys).all()


def test_format_is_stable() -> None:
    # Pinned bytes: a change here breaks every stats log already in storage.
    int_blob = PkBloomFilter.build(pa.array(range(-500, 500), pa.int64())).to_bytes()
    str_blob = PkBloomFilter.build(pa.array([f"pk-{i}" for i in range(1000)])).to_bytes()
    assert int_blob[:28] == b"SPBF\x01\x05\x00\x00" + (10).to_bytes(4, "little") + (14400).to_bytes(8, "little") + (
        1000
    ).to_bytes(8, "little")
    assert hashlib.sha256(int_blob).hexdigest() == INT_DIGEST
    assert hashlib.sha256(str_blob).hexdigest() == STR_DIGEST


INT_DIGEST = "ac25170c3b12cd80b6e0166b2ac7a79db8b656a48b7c4934aff1dfa00eda6a02"
STR_DIGEST = "af6b94960a09afda7e6c8fe05acf56bf4ed35f07f989cc7a2a469be54d7d8f54"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b[:10],
        lambda b: b"XXXX" + b[4:],
        lambda b: b[:4] + b"\x02" + b[5:],
        lambda b: b[:5] + b"\x63" + b[6:],
        lambda b: b + b"\x00",
        lambda b: b[:-1],
    ],
)
def test_corrupt_bytes_are_refused(mutate: object) -> None:
    blob = PkBloomFilter.build(pa.array(range(10))).to_bytes()
    with pytest.raises(CorruptObject):
        PkBloomFilter.from_bytes(mutate(blob))  # type: ignore[operator]
