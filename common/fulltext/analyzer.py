"""Text analyzers with Milvus' ``analyzer_params``: a tokenizer, then filters, token by token.

Milvus builds its analyzers from tantivy's parts (its ``tantivy-binding``); Strata
builds the same ones from the same parts through tantivy's Python bindings, and
jieba-rs (``rjieba``) for Chinese:

* ``{"type": "standard", "stop_words": [...]}`` (the default, also for ``{}``):
  the ``standard`` tokenizer, ``lowercase``, then the stop words if given;
* ``{"type": "english", "stop_words": [...]}``: ``standard``, ``lowercase``, the
  English Snowball stemmer, the ``_english_`` stop words, then the given ones;
* ``{"type": "chinese", "stop_words": [...]}``: ``jieba`` then ``cnalphanumonly``;
* ``{"tokenizer": T, "filter": [F, ...]}``: a custom analyzer. Tokenizers:
  ``standard`` (runs of alphanumeric characters: tantivy's simple tokenizer, as
  Milvus' default standard tokenizer), ``whitespace``, ``jieba`` (``dict``,
  ``mode`` exact | search, ``hmm``). Filters: ``lowercase``, ``asciifolding``,
  ``alphanumonly``, ``cncharonly``, ``cnalphanumonly``, ``removepunct``, and the
  objects ``{"type": "stop", "stop_words": [...]}`` (``_english_``, ``_french_``,
  ... name built-in lists), ``{"type": "stemmer", "language": L}``,
  ``{"type": "length", "max": N}`` (keeps tokens of at most N bytes).

Every filter maps one token to one token or drops it, so a token keeps the
position the tokenizer gave it (a dropped stop word leaves a gap, as in tantivy):
phrase matching depends on it. Bad parameters raise ``InvalidArgument``.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import rjieba
import tantivy

from common.errors import InvalidArgument

#: Milvus' ``_english_`` stop words (tantivy's English list).
ENGLISH_STOP_WORDS = ["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with"]
#: ``_<language>_`` stop word lists Milvus names; English is held here, the others come from tantivy.
_STOP_LANGUAGES = (
    "danish", "dutch", "finnish", "french", "german", "hungarian", "italian", "norwegian", "portuguese",
    "russian", "spanish", "swedish",
)
_STEMMER_LANGUAGES = (
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek", "hungarian", "italian",
    "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
)
_CACHE_LIMIT = 200_000

TokenFilter = Callable[[str], str | None]


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its text after the filters, its character span in the input, its position."""

    text: str
    start: int
    end: int
    position: int


Tokenizer = Callable[[str], list[Token]]


class Analyzer:
    """A tokenizer and filters; ``tokens`` is safe to call from several threads."""

    def __init__(self, tokenizer: Tokenizer, filters: Sequence[TokenFilter]) -> None:
        self._tokenizer = tokenizer
        self._filters = tuple(filters)
        self._cache: dict[str, str | None] = {}

    def _filter(self, text: str) -> str | None:
        out = self._cache.get(text, "")
        if out != "":
            return out
        value: str | None = text
        for f in self._filters:
            if value is None:
                break
            value = f(value)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[text] = value
        return value

    def tokens(self, text: str) -> list[Token]:
        """The tokens of ``text`` in order, with positions (filtered-out tokens leave gaps)."""
        out: list[Token] = []
        for tok in self._tokenizer(text):
            value = self._filter(tok.text) if self._filters else tok.text
            if value is not None and value != "":
                out.append(Token(value, tok.start, tok.end, tok.position))
        return out

    def terms(self, text: str) -> list[str]:
        """Just the token texts of ``text``, in order (the tokens' texts without their spans when the
        tokenizer can give them alone: BM25 and text queries need no spans)."""
        texts = getattr(self._tokenizer, "texts", None)
        pieces: list[str] = texts(text) if texts is not None else [t.text for t in self._tokenizer(text)]
        if not self._filters:
            return [p for p in pieces if p]
        out: list[str] = []
        for piece in pieces:
            value = self._filter(piece)
            if value:
                out.append(value)
        return out

    def positioned_terms(self, text: str) -> list[tuple[str, int]]:
        """The token texts of ``text`` with their positions: ``tokens`` without the spans, about as fast as
        ``terms`` when the tokenizer can give texts alone (a tantivy tokenizer numbers its pieces in order)."""
        texts = getattr(self._tokenizer, "texts", None)
        if texts is None:
            return [(t.text, t.position) for t in self.tokens(text)]
        out: list[tuple[str, int]] = []
        for position, piece in enumerate(texts(text)):
            value = self._filter(piece) if self._filters else piece
            if value:
                out.append((value, position))
        return out


# -- tokenizers ---------------------------------------------------------------------------------


def _spans(text: str, pieces: Sequence[str]) -> list[Token]:
    """Tokens whose texts are substrings of ``text`` in order (their spans found left to right)."""
    out: list[Token] = []
    cursor = 0
    for i, piece in enumerate(pieces):
        at = text.find(piece, cursor)
        if at < 0:  # cannot happen for tantivy's splitting tokenizers; keep the token anyway
            at = cursor
        out.append(Token(piece, at, at + len(piece), i))
        cursor = at + len(piece)
    return out


class _TantivyTokenizer:
    """A tantivy tokenizer: tokens with spans, or (``texts``) just their texts."""

    def __init__(self, tok: Any) -> None:
        self._analyzer = tantivy.TextAnalyzerBuilder(tok).build()

    def __call__(self, text: str) -> list[Token]:
        return _spans(text, self._analyzer.analyze(text))

    def texts(self, text: str) -> list[str]:
        out: list[str] = self._analyzer.analyze(text)
        return out


def _tantivy_tokenizer(tok: Any) -> Tokenizer:
    return _TantivyTokenizer(tok)


def _jieba_tokenizer(params: Mapping[str, Any]) -> Tokenizer:
    words = params.get("dict", ["_default_"])
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise InvalidArgument("jieba tokenizer dict must be array of strings")
    mode = params.get("mode", "search")
    if mode not in ("exact", "search"):
        raise InvalidArgument('jieba tokenizer mode must be "exact" or "search"')
    hmm = params.get("hmm", True)
    if not isinstance(hmm, bool):
        raise InvalidArgument("jieba tokenizer hmm must be boolean")
    custom = [w for w in words if w not in ("_default_", "_extend_default_")]
    if "_extend_default_" in words:
        raise InvalidArgument("jieba dict _extend_default_ is not supported yet")
    jieba: Any = rjieba
    if custom or "_default_" not in words:
        jieba = rjieba.Jieba() if "_default_" in words else rjieba.Jieba.empty()
        for w in custom:
            jieba.add_word(w, None, None)
    jieba_mode = "search" if mode == "search" else "default"

    def run(text: str) -> list[Token]:
        # Milvus gives a jieba token its starting character as position.
        return [Token(w, s, e, s) for w, s, e in jieba.tokenize(text, mode=jieba_mode, hmm=hmm)]

    return run


def _tokenizer(spec: Any) -> Tokenizer:
    params: Mapping[str, Any]
    if isinstance(spec, str):
        name, params = spec, {}
    elif isinstance(spec, dict):
        kind, params = spec.get("type"), spec
        if not isinstance(kind, str):
            raise InvalidArgument("tokenizer type should be string")
        name = kind
    else:
        raise InvalidArgument("tokenizer name or type must be string or object")
    match name:
        case "standard":
            if params.get("uax29"):
                raise InvalidArgument("standard tokenizer uax29 is not supported yet")
            return _tantivy_tokenizer(tantivy.Tokenizer.simple())
        case "whitespace":
            return _tantivy_tokenizer(tantivy.Tokenizer.whitespace())
        case "jieba":
            return _jieba_tokenizer(params)
        case _:
            raise InvalidArgument(f"unsupported tokenizer: {name}")


# -- filters ------------------------------------------------------------------------------------


def _tantivy_filter(f: Any) -> TokenFilter:
    one = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw()).filter(f).build()

    def run(text: str) -> str | None:
        out = one.analyze(text)
        return out[0] if out else None

    return run


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2A6DF or 0xF900 <= code <= 0xFAFF


def _keep_if(test: Callable[[str], bool]) -> TokenFilter:
    return lambda text: text if test(text) else None


def _stop_words(raw: Any) -> TokenFilter:
    words = [raw] if isinstance(raw, str) else raw
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise InvalidArgument("stop_words should be list of string")
    plain: set[str] = set()
    lists: list[TokenFilter] = []
    for w in words:
        if w == "_english_":
            plain.update(ENGLISH_STOP_WORDS)
        elif w.startswith("_") and w.endswith("_") and w.strip("_") in _STOP_LANGUAGES:
            lists.append(_tantivy_filter(tantivy.Filter.stopword(w.strip("_"))))
        else:
            plain.add(w)

    def run(text: str) -> str | None:
        if text in plain:
            return None
        for f in lists:
            if f(text) is None:
                return None
        return text

    return run


def _filter(spec: Any) -> TokenFilter:
    if isinstance(spec, str):
        match spec:
            case "lowercase":
                return _tantivy_filter(tantivy.Filter.lowercase())
            case "asciifolding":
                return _tantivy_filter(tantivy.Filter.ascii_fold())
            case "alphanumonly":
                return _keep_if(lambda t: t.isascii() and t.isalnum())
            case "cncharonly":
                return _keep_if(lambda t: all(_is_cjk(c) for c in t))
            case "cnalphanumonly":
                return _keep_if(lambda t: all(_is_cjk(c) or (c.isascii() and c.isalnum()) for c in t))
            case "removepunct":
                return _keep_if(lambda t: not all(unicodedata.category(c).startswith("P") for c in t))
            case _:
                raise InvalidArgument(f"unsupport filter type: {spec}")
    if not isinstance(spec, dict):
        raise InvalidArgument("filter params should be string or object")
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise InvalidArgument("no type field in filter params" if kind is None else "filter type should be string")
    match kind:
        case "stop":
            return _stop_words(spec.get("stop_words", []))
        case "stemmer":
            language = spec.get("language")
            if not isinstance(language, str) or language.lower() not in _STEMMER_LANGUAGES:
                raise InvalidArgument(f"unsupported stemmer language: {language}")
            return _tantivy_filter(tantivy.Filter.stemmer(language.lower()))
        case "length":
            limit = spec.get("max")
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise InvalidArgument("length max param was none or not uint")
            return _keep_if(lambda t: len(t.encode()) <= limit)
        case _:
            raise InvalidArgument(f"unsupport filter type: {kind}")


# -- analyzers ----------------------------------------------------------------------------------


def _builtin(kind: str, params: Mapping[str, Any]) -> Analyzer:
    stop = params.get("stop_words")
    extra = [_stop_words(stop)] if stop else []
    match kind:
        case "standard":
            return Analyzer(_tokenizer("standard"), [_filter("lowercase"), *extra])
        case "english":
            english = [_filter("lowercase"), _filter({"type": "stemmer", "language": "english"}),
                       _stop_words(["_english_"])]
            return Analyzer(_tokenizer("standard"), [*english, *extra])
        case "chinese":
            return Analyzer(_tokenizer("jieba"), [_filter("cnalphanumonly"), *extra])
        case _:
            raise InvalidArgument(f"unsupported analyzer type: {kind}")


def parse_analyzer_params(raw: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """``analyzer_params`` (a JSON text or a mapping) as a dict; ``InvalidArgument`` if not an object."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError as err:
            raise InvalidArgument(f"analyzer params is not a valid json: {err}") from None
    if not isinstance(raw, Mapping):
        raise InvalidArgument("analyzer params should be a json map")
    return dict(raw)


def build_analyzer(raw: str | Mapping[str, Any] | None) -> Analyzer:
    """The analyzer ``analyzer_params`` describe (see the module docstring)."""
    params = parse_analyzer_params(raw)
    if "type" in params:
        kind = params["type"]
        if not isinstance(kind, str):
            raise InvalidArgument("analyzer type should be string")
        return _builtin(kind, params)
    if "tokenizer" not in params:
        if params.get("filter"):
            raise InvalidArgument("analyzer params set filter but no tokenizer")
        return _builtin("standard", params)
    filters = params.get("filter", [])
    if not isinstance(filters, list):
        raise InvalidArgument("filter params should be array")
    return Analyzer(_tokenizer(params["tokenizer"]), [_filter(f) for f in filters])


_BUILT: dict[str, Analyzer] = {}


def analyzer_for(raw: str | None) -> Analyzer:
    """A shared analyzer per distinct ``analyzer_params`` text (a field's, kept in its type params)."""
    key = raw or ""
    found = _BUILT.get(key)
    if found is None:
        found = _BUILT[key] = build_analyzer(raw)
    return found
