"""The text-match index of a sealed segment: the same rows as the scan, through a round trip to
storage, and absent (not wrong) when what is stored does not fit."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from common.expr import evaluate, parse_filter
from common.fulltext.analyzer import analyzer_for
from common.fulltext.text_match import match_any, match_phrase
from common.schema import CollectionSchema, DataType, FieldSchema
from common.storage.layout import text_index_dir
from common.storage.objectstore import ObjectStore
from segcore.index.scalar.planner import IndexedFilter
from segcore.index.text.index import TextIndex
from segcore.index.text.store import build_text_index, load_text_index, save_text_index, text_fields

WORDS = ["the", "a", "of", "vector", "database", "milvus", "search", "engine", "text", "sparse", "dense", "index", "query", "fast"]
ANALYZERS = [
    "",
    json.dumps({"type": "english"}),  # stop words leave gaps in the positions, words are stemmed
    json.dumps({"tokenizer": "standard", "filter": ["lowercase", {"type": "stop", "stop_words": ["of", "the"]}]}),
    json.dumps({"tokenizer": "jieba"}),  # no texts-only tokenizer: positions from tokens()
]


def _texts(n: int, seed: int) -> list[str | None]:
    rng = random.Random(seed)
    out: list[str | None] = []
    for _ in range(n):
        if rng.random() < 0.05:
            out.append(None if rng.random() < 0.5 else "")
            continue
        words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
        out.append(" ".join(w.capitalize() if rng.random() < 0.2 else w for w in words))
    return out


@pytest.mark.parametrize("params", ANALYZERS)
def test_the_index_matches_the_scan_after_a_round_trip(params: str) -> None:
    analyzer = analyzer_for(params or None)
    texts = _texts(500, seed=len(params))
    index = TextIndex.from_bytes(TextIndex.build(analyzer, texts).to_bytes(), len(texts))
    rng = random.Random(5)
    queries = ["vector", "the database", "Fast search engine", "milvus of text", "zzz", "", "the of"]
    queries += [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(10)]
    for query in queries:
        assert np.array_equal(index.match(analyzer, query, None), match_any(analyzer, texts, query)), query
        for slop in (0, 1, 2, 5):
            expected = match_phrase(analyzer, texts, query, slop)
            assert np.array_equal(index.match(analyzer, query, slop), expected), (query, slop)


SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="t", dtype=DataType.VARCHAR, max_length=100,
                    type_params={"enable_analyzer": "true", "enable_match": "true",
                                 "analyzer_params": '{"type": "english"}'}),
        FieldSchema(field_id=102, name="plain", dtype=DataType.VARCHAR, max_length=100),
    ),
)


def test_saved_index_loads_and_what_does_not_fit_is_absent(tmp_path: Path) -> None:
    store = ObjectStore.from_uri((tmp_path / "bucket").as_uri())
    [field] = text_fields(SCHEMA)
    assert field.name == "t" and field.field_id == 101
    texts = _texts(200, seed=1)
    built = build_text_index(field, texts)
    save_text_index(store, 1, 2, field, built)
    loaded = load_text_index(store, 1, 2, field, rows=200)
    assert loaded is not None and loaded.terms == built.terms
    assert np.array_equal(loaded.docs, built.docs) and np.array_equal(loaded.positions, built.positions)
    assert load_text_index(store, 1, 2, field, rows=201) is None  # another row count
    other = type(field)(name="t", field_id=101, analyzer_params="")
    assert load_text_index(store, 1, 2, other, rows=200) is None  # another analyzer
    assert load_text_index(store, 1, 3, field, rows=200) is None  # nothing saved
    directory = tmp_path / "bucket" / text_index_dir(1, 2, 101)
    data = next(directory.glob("text-*.npz"))
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    assert load_text_index(store, 1, 2, field, rows=200) is None  # corrupt


def test_filters_read_the_segment_index_not_the_column() -> None:
    """``IndexedFilter`` answers text leaves from the index (the column is not even there) and the evaluator
    combines them with scanned leaves as the scan does; an index built with another analyzer is not used."""
    [field] = text_fields(SCHEMA)
    texts = _texts(400, seed=9)
    table = pa.table({"id": pa.array(range(400), pa.int64()), "t": pa.array(texts, pa.string()),
                      "plain": pa.array(["x"] * 400, pa.string())})
    indexes = IndexedFilter([], {"t": (field.analyzer_params, build_text_index(field, texts))})
    without_text = table.drop_columns(["t"])
    for text in ("TEXT_MATCH(t, 'vector engine')", "PHRASE_MATCH(t, 'the fast search', 1)",
                 "TEXT_MATCH(t, 'milvus') and id > 100", "not PHRASE_MATCH(t, 'dense index') or id < 20"):
        expr = parse_filter(text, SCHEMA)
        assert np.array_equal(evaluate(expr, without_text, indexes=indexes), evaluate(expr, table)), text
    mask = indexes.mask(parse_filter("TEXT_MATCH(t, 'sparse') or PHRASE_MATCH(t, 'text query', 0)", SCHEMA))
    assert mask is not None and mask.any()
    other = IndexedFilter([], {"t": ("", build_text_index(field, texts))})  # not the field's analyzer
    assert other.leaf(parse_filter("TEXT_MATCH(t, 'vector')", SCHEMA)) is None
