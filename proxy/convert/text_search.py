"""The texts of a full-text search as the sparse queries the query nodes score with BM25.

pymilvus sends ``data=["some words"]`` as a ``VarChar`` placeholder. The
anns field must be a BM25 function's output; each text is analyzed with the
analyzer of the function's input field and becomes its term frequencies
(``common/fulltext/bm25.py``); the delegator weighs them with its IDF.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from common.errors import InvalidArgument
from common.fulltext.bm25 import embed
from common.fulltext.functions import bm25_analyzer
from common.schema import CollectionSchema, FieldSchema
from proxy.convert.sparse import sparse_queries


def text_queries(schema: CollectionSchema | None, anns: FieldSchema, values: Sequence[bytes]) -> np.ndarray:
    """A padded sparse batch of the texts' term frequencies; ``InvalidArgument`` when ``anns`` is not
    a BM25 output field or a text is not UTF-8."""
    analyzer = None if schema is None else bm25_analyzer(schema, anns.name)
    if analyzer is None:
        raise InvalidArgument(
            f"search with text is only supported on the output field of a BM25 function, "
            f"field {anns.name} is not one"
        )
    try:
        texts = [v.decode() for v in values]
    except UnicodeDecodeError:
        raise InvalidArgument("the search texts are not UTF-8") from None
    return sparse_queries(embed(analyzer, texts))
