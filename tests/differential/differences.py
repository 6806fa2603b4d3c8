"""What milvus-lite lacks, and where Strata and milvus-lite answer differently.

Every generated step carries the ``Feature`` values it exercises. A step with a
feature listed here is not compared with milvus-lite:

* ``LITE_UNSUPPORTED``: milvus-lite rejects what Milvus accepts (a parse
  error); Strata's answer is compared with the workload's model of the rows.
* ``KNOWN_DIFFERENCES``: Strata and milvus-lite answer differently, or both
  differ from Milvus. Each entry names its line in README.md "Known
  differences" (``D1``...) for the lead to decide on. ``Handling.MODEL`` keeps
  generating such steps and checks Strata against the model, which follows
  Milvus's semantics as Strata documents them; ``Handling.SKIP`` stops
  generating them (the only choice for a write that succeeds, since a write
  milvus-lite does not run would leave the servers with different rows).
  Deleting an entry makes the workload compare that feature with milvus-lite
  again, so a fix shows up as a green run with the entry removed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final


class Feature(Enum):
    """Something a step exercises that milvus-lite may not answer like Milvus."""

    # Filter language milvus-lite rejects.
    CHAINED_RANGE = "chained range `1 < i <= 5`"
    MODULO = "`%` operator"
    JSON_IN = "`in` on a JSON path"
    JSON_ARRAY_LENGTH = "`array_length` on a JSON path"
    JSON_LIST_EQUALITY = "a JSON path compared with a list literal"
    ARRAY_LIST_EQUALITY = "an ARRAY field compared with a list literal"
    # Calls milvus-lite does not implement (UNIMPLEMENTED) or refuses.
    PARTITION_LOAD_STATE = "release_partitions / load_partitions, and reads while a partition is released"
    SEARCH_BY_IDS = "search by primary keys (`ids=` instead of `data=`)"
    SPARSE_DROP_RATIO = "a sparse search with `drop_ratio_search` above 0"
    # Filters milvus-lite answers differently.
    INT_DIVISION = "`/` on integers"
    JSON_NEGATED = "a JSON predicate under `not` or `!=`"
    JSON_BOOL_VS_NUMBER = "a JSON bool compared with a number, or a JSON number with a bool"
    JSON_EXISTS = "`exists` on a JSON path"
    NOT_IN_NULL = "`not in`, or `not (... in ...)`, on a nullable field"
    LIKE_ESCAPE = "`like` with an escaped `%` or `_`"
    ARRAY_NEGATED = "an ARRAY predicate under `not` or `!=` (a null array, an element past the end)"
    NULL_ARRAY_LENGTH = "`array_length` of a nullable ARRAY field"
    # Filters both servers fail on where Milvus answers.
    INT64_VS_DOUBLE = "an INT64 field beyond ±2**53 compared with a double"
    # Calls milvus-lite answers differently.
    UNKNOWN_OUTPUT_FIELD = "query or search with an output field the schema lacks"
    EMPTY_FILTER_NO_LIMIT = "query with an empty filter and no limit"
    COUNT_WITH_FIELDS = "`count(*)` with other output fields"
    PK_LOOKUP = "a filter that is exactly `id in [...]`, with limit/offset or a repeated key"
    SEARCH_DEFAULT_OUTPUT = "search without output_fields"
    ROW_COUNT = "get_collection_stats row_count after deletes and upserts"
    COUNT_ALL_IN_PARTITIONS = "`count(*)` with an empty filter in some partitions"
    JSON_SCALAR_DOCUMENT = 'a JSON field holding a scalar document (`3`, `"x"`)'
    NULL_VECTOR = "a null in a nullable vector field, read back or met by a search"
    EMPTY_SPARSE_ROW = "a sparse vector with no weight, or with a zero weight"
    LITE_ACCEPTS_INVALID = "a request Milvus validates and refuses (schema limits, top-k bounds, metric, NaN vectors)"
    LONG_COLLECTION_NAME = "a collection name longer than 255 characters"
    # Writes milvus-lite carries out otherwise than Milvus 2.6 (scenarios.py).
    AUTO_ID_UPSERT = "an upsert into an auto-id collection (Milvus gives the rows new keys)"
    DUPLICATE_KEY_ROWS = "`count(*)` after one insert named a key twice (Milvus counts every row)"
    PARTITION_ROWS = "a key with a row in two partitions; a delete or upsert naming one of them"
    # Calls both servers accept where Milvus refuses.
    COLLECTION_NAME_CHARACTERS = "a collection name starting with a digit or holding a `-`, a partition name with a space"


class Handling(Enum):
    MODEL = "checked against the model only"
    SKIP = "not generated"


@dataclass(frozen=True, slots=True, kw_only=True)
class KnownDifference:
    report: str  # its entry in README.md "Known differences"
    handling: Handling


LITE_UNSUPPORTED: Final[frozenset[Feature]] = frozenset(
    {
        Feature.CHAINED_RANGE,
        Feature.MODULO,
        Feature.JSON_IN,
        Feature.JSON_ARRAY_LENGTH,
        Feature.JSON_LIST_EQUALITY,
        Feature.ARRAY_LIST_EQUALITY,
        Feature.PARTITION_LOAD_STATE,
        Feature.SEARCH_BY_IDS,
        Feature.SPARSE_DROP_RATIO,
    }
)

KNOWN_DIFFERENCES: Final[Mapping[Feature, KnownDifference]] = {
    Feature.INT_DIVISION: KnownDifference(report="D1", handling=Handling.MODEL),
    Feature.JSON_NEGATED: KnownDifference(report="D2", handling=Handling.MODEL),
    Feature.JSON_BOOL_VS_NUMBER: KnownDifference(report="D3", handling=Handling.MODEL),
    Feature.JSON_EXISTS: KnownDifference(report="D4", handling=Handling.MODEL),
    Feature.NOT_IN_NULL: KnownDifference(report="D5", handling=Handling.MODEL),
    Feature.UNKNOWN_OUTPUT_FIELD: KnownDifference(report="D6", handling=Handling.MODEL),
    Feature.EMPTY_FILTER_NO_LIMIT: KnownDifference(report="D7", handling=Handling.MODEL),
    Feature.COUNT_WITH_FIELDS: KnownDifference(report="D8", handling=Handling.MODEL),
    Feature.SEARCH_DEFAULT_OUTPUT: KnownDifference(report="D9", handling=Handling.MODEL),
    Feature.ROW_COUNT: KnownDifference(report="D10", handling=Handling.MODEL),
    Feature.JSON_SCALAR_DOCUMENT: KnownDifference(report="D11", handling=Handling.SKIP),
    Feature.INT64_VS_DOUBLE: KnownDifference(report="D12", handling=Handling.MODEL),
    Feature.LIKE_ESCAPE: KnownDifference(report="D13", handling=Handling.MODEL),
    Feature.PK_LOOKUP: KnownDifference(report="D14", handling=Handling.MODEL),
    Feature.LITE_ACCEPTS_INVALID: KnownDifference(report="D15", handling=Handling.MODEL),
    Feature.COLLECTION_NAME_CHARACTERS: KnownDifference(report="D17", handling=Handling.MODEL),
    Feature.COUNT_ALL_IN_PARTITIONS: KnownDifference(report="D20", handling=Handling.MODEL),
    Feature.ARRAY_NEGATED: KnownDifference(report="D23", handling=Handling.MODEL),
    Feature.NULL_ARRAY_LENGTH: KnownDifference(report="D24", handling=Handling.MODEL),
    Feature.EMPTY_SPARSE_ROW: KnownDifference(report="D25", handling=Handling.SKIP),
    Feature.NULL_VECTOR: KnownDifference(report="D26", handling=Handling.MODEL),
    Feature.AUTO_ID_UPSERT: KnownDifference(report="D27", handling=Handling.MODEL),
    Feature.DUPLICATE_KEY_ROWS: KnownDifference(report="D28", handling=Handling.MODEL),
    Feature.PARTITION_ROWS: KnownDifference(report="D29", handling=Handling.MODEL),
}


def skipped(features: frozenset[Feature]) -> bool:
    """Whether a step with these features is left out of the workload."""
    return any(f in KNOWN_DIFFERENCES and KNOWN_DIFFERENCES[f].handling is Handling.SKIP for f in features)


def model_only(features: frozenset[Feature]) -> bool:
    """Whether a step with these features is checked against the model instead of milvus-lite."""
    return any(f in LITE_UNSUPPORTED or f in KNOWN_DIFFERENCES for f in features)


def with_feature(features: frozenset[Feature], flag: Feature, on: bool) -> frozenset[Feature]:
    """``features`` with ``flag`` added when ``on``."""
    return features | {flag} if on else features
