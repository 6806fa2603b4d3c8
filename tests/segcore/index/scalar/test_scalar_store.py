"""Scalar indexes saved beside the segment: read back whole, and treated as absent when they do not fit."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pyarrow as pa

from common.schema import CollectionSchema, DataType, FieldSchema
from common.storage.objectstore import ObjectStore
from segcore.index.scalar.index import ScalarIndex, build_scalar_index
from segcore.index.scalar.spec import scalar_index_spec
from segcore.index.scalar.store import load_scalar_index, save_scalar_index
from segcore.index.store import index_dir

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="s", dtype=DataType.VARCHAR, max_length=16),
    ),
)


def _table() -> pa.Table:
    return pa.table({"id": pa.array(range(6), pa.int64()), "s": ["ab", "b", None, "ab", "abc", "zz"]})


def test_saved_index_loads_and_answers_the_same(tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "bucket").as_uri())
    spec = scalar_index_spec(SCHEMA, "s", {"index_type": "NGRAM", "params": '{"min_gram": 1, "max_gram": 2}'})
    built = build_scalar_index(spec, _table())
    save_scalar_index(store, 1, 2, 3, 101, built)
    loaded = load_scalar_index(store, 1, 2, 3, 101, spec, rows=6)
    assert loaded is not None and loaded.has_nulls
    assert np.array_equal(loaded.postings.rows, built.postings.rows)
    assert list(loaded.postings.keys) == ["ab", "abc", "b", "zz"]
    assert loaded.grams is not None and loaded.grams.num_rows == 4


def test_a_stored_index_that_does_not_fit_is_absent(tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "bucket").as_uri())
    spec = scalar_index_spec(SCHEMA, "s", {"index_type": "INVERTED"})
    save_scalar_index(store, 1, 2, 3, 101, build_scalar_index(spec, _table()))
    assert load_scalar_index(store, 1, 2, 3, 101, spec, rows=7) is None  # another row count
    other = scalar_index_spec(SCHEMA, "s", {"index_type": "Trie"})
    assert load_scalar_index(store, 1, 2, 3, 101, other, rows=6) is None  # another definition
    assert load_scalar_index(store, 1, 2, 4, 101, spec, rows=6) is None  # nothing saved
    directory = Path(tmp_path / "bucket" / index_dir(1, 2, 3))
    data = next(directory.glob("scalar-*.bin"))
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    assert load_scalar_index(store, 1, 2, 3, 101, spec, rows=6) is None  # corrupt


def test_an_index_saved_in_the_first_format_still_loads() -> None:
    """``SSI1`` (before cast functions kept their converted values apart) is read for every other index."""
    built = build_scalar_index(scalar_index_spec(SCHEMA, "s", {"index_type": "INVERTED"}), _table())
    postings = built.postings.to_bytes()
    old = struct.pack("<4sBBqq", b"SSI1", 1, 1, len(postings), 0) + postings
    loaded = ScalarIndex.from_bytes(built.spec, old)
    assert loaded.exact and loaded.has_nulls and loaded.converted is None
    assert np.array_equal(loaded.postings.keys, built.postings.keys)
