"""Analyzers give the tokens Milvus' documentation shows for its examples; bad params are refused."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from common.fulltext.analyzer import build_analyzer
from common.fulltext.bm25 import term_index

SAMPLE = "The Milvus vector database is built for scale!"


@pytest.mark.parametrize(
    ("params", "text", "tokens"),
    [
        # standard-analyzer.md, english-analyzer.md, jieba-tokenizer.md: "Expected output"
        ({"type": "standard", "stop_words": ["for"]}, SAMPLE,
         ["the", "milvus", "vector", "database", "is", "built", "scale"]),
        ({"type": "english", "stop_words": ["a", "an", "the"]}, SAMPLE, ["milvus", "vector", "databas", "built", "scale"]),
        ({"tokenizer": {"type": "jieba", "dict": ["结巴分词器"], "mode": "exact", "hmm": False}},
         "milvus结巴分词器中文测试", ["milvus", "结巴分词器", "中", "文", "测", "试"]),
        # jieba keeps punctuation as tokens (jieba-tokenizer.md's note); removepunct drops them.
        ({"tokenizer": "jieba"}, "你好！世界。", ["你好", "！", "世界", "。"]),
        ({"tokenizer": "jieba", "filter": ["removepunct"]}, "你好！世界。", ["你好", "世界"]),
        ({}, "Hello, World! hello-world 42", ["hello", "world", "hello", "world", "42"]),
        ({"tokenizer": "whitespace"}, "Hello, World!", ["Hello,", "World!"]),
        ({"tokenizer": "standard", "filter": ["lowercase", {"type": "length", "max": 5}]}, "tiny enormous words",
         ["tiny", "words"]),
        ({"tokenizer": "standard", "filter": ["asciifolding", "lowercase"]}, "Café Naïve", ["cafe", "naive"]),
        ({"tokenizer": "standard", "filter": ["alphanumonly"]}, "abc 中文 x1", ["abc", "x1"]),
        ({"tokenizer": "standard", "filter": ["lowercase", {"type": "stop", "stop_words": ["_english_", "milvus"]}]},
         SAMPLE, ["vector", "database", "built", "scale"]),
        ({"tokenizer": "standard", "filter": [{"type": "stemmer", "language": "english"}]}, "running jumps",
         ["run", "jump"]),
    ],
)
def test_tokens_as_milvus_documents(params: dict[str, object], text: str, tokens: list[str]) -> None:
    assert build_analyzer(params).terms(text) == tokens


@pytest.mark.parametrize("params", [
    {}, {"type": "english"}, {"tokenizer": "whitespace", "filter": ["lowercase"]}, {"tokenizer": "jieba"},
    {"tokenizer": "standard", "filter": ["asciifolding", "lowercase", {"type": "length", "max": 4}]},
    {"tokenizer": "standard"},
])
def test_terms_are_the_texts_of_the_tokens(params: dict[str, object]) -> None:
    # terms() skips the spans where the tokenizer can; the texts stay those of tokens().
    analyzer = build_analyzer(params)
    texts = [SAMPLE, "", "  ", "Café, naïve -- the THE the; x1 中文测试 don't e-mail a@b.c", "a" * 300 + " b"]
    for text in texts:
        assert analyzer.terms(text) == [t.text for t in analyzer.tokens(text)]


def test_positions_keep_gaps_of_dropped_tokens() -> None:
    analyzer = build_analyzer({"type": "english"})
    assert [(t.text, t.position) for t in analyzer.tokens("the quick fox")] == [("quick", 1), ("fox", 2)]


def test_bm25_hash_is_crc32_of_the_token() -> None:
    assert term_index("hello") == 907060870  # zlib.crc32(b"hello")
    assert term_index("x" * 150) == term_index("x" * 100)  # Milvus hashes the first 100 bytes


@pytest.mark.parametrize(
    "params",
    [
        {"type": "klingon"},
        {"tokenizer": "nope"},
        {"tokenizer": "standard", "filter": ["nope"]},
        {"tokenizer": "standard", "filter": [{"type": "length"}]},
        {"tokenizer": "standard", "filter": [{"type": "stemmer", "language": "elvish"}]},
        {"tokenizer": {"type": "jieba", "mode": "fast"}},
        "not json",
        "[1, 2]",
    ],
)
def test_bad_params_are_refused(params: object) -> None:
    with pytest.raises(InvalidArgument):
        build_analyzer(params)  # type: ignore[arg-type]
