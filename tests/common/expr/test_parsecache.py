"""Short filters are bound once per schema and shared; another schema, or a bad filter, is never served from it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from common.errors import IllegalFilter
from common.expr.parsecache import ParseCache
from common.schema import CollectionSchema, DataType, FieldSchema

SCHEMA = CollectionSchema(
    name="c",
    fields=(
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True),
        FieldSchema(field_id=101, name="k", dtype=DataType.INT64),
    ),
)


def test_a_repeated_filter_is_bound_once() -> None:
    cache = ParseCache()
    first = cache.parse("k == 7", SCHEMA)
    assert cache.parse("k == 7", SCHEMA) is first


def test_a_changed_field_type_binds_again() -> None:
    cache = ParseCache()
    cache.parse("k == 7", SCHEMA)
    as_varchar = replace(SCHEMA, version=1, fields=(SCHEMA.fields[0], replace(SCHEMA.fields[1], dtype=DataType.VARCHAR)))
    with pytest.raises(IllegalFilter):
        cache.parse("k == 7", as_varchar)


def test_errors_are_not_kept_and_the_oldest_entry_goes_first() -> None:
    cache = ParseCache(capacity=2)
    for _ in range(2):
        with pytest.raises(IllegalFilter):
            cache.parse("zz == 1", SCHEMA)
    a = cache.parse("k == 1", SCHEMA)
    cache.parse("k == 2", SCHEMA)
    cache.parse("k == 3", SCHEMA)
    assert cache.parse("k == 1", SCHEMA) is not a  # evicted, bound again
