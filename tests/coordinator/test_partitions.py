"""Partition metadata rules: the partitions a collection starts with, catalog round trips (names:
``tests/common/test_names.py``)."""

from __future__ import annotations

import json

import pytest

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType, FieldSchema
from coordinator.catalog import CollectionMeta, PartitionInfo
from coordinator.partitions import DEFAULT_KEY_PARTITIONS, initial_partitions


def _schema(*, key: DataType | None = None, pk_is_key: bool = False) -> CollectionSchema:
    fields = [
        FieldSchema(field_id=100, name="id", dtype=DataType.INT64, is_primary=True, is_partition_key=pk_is_key),
        FieldSchema(field_id=101, name="v", dtype=DataType.FLOAT_VECTOR, dim=4),
    ]
    if key is not None:
        fields.append(FieldSchema(field_id=102, name="k", dtype=key, max_length=8, is_partition_key=True))
    return CollectionSchema(name="c", fields=tuple(fields))


def test_a_collection_starts_with_default_or_key_partitions() -> None:
    assert initial_partitions(_schema(), 0) == ["_default"]
    assert initial_partitions(_schema(key=DataType.INT64), 0) == [
        f"_default_{i}" for i in range(DEFAULT_KEY_PARTITIONS)
    ]
    assert initial_partitions(_schema(key=DataType.VARCHAR), 3) == ["_default_0", "_default_1", "_default_2"]
    with pytest.raises(InvalidArgument, match="only be specified with a partition key"):
        initial_partitions(_schema(), 4)
    with pytest.raises(InvalidArgument, match="between 1 and 1024"):
        initial_partitions(_schema(key=DataType.INT64), 5000)
    with pytest.raises(InvalidArgument, match="must be Int64 or VarChar"):
        initial_partitions(_schema(key=DataType.DOUBLE), 0)
    with pytest.raises(InvalidArgument, match="cannot be the primary key"):
        initial_partitions(_schema(pk_is_key=True), 0)


def test_partitions_survive_the_catalog_and_old_metadata_has_the_default_one() -> None:
    meta = CollectionMeta(
        collection_id=7,
        name="c",
        schema=_schema(),
        vchannels=("p_7v0",),
        consistency_level=0,
        created_ts=99,
        default_partition_id=8,
        partitions=(PartitionInfo(8, "_default", 99), PartitionInfo(12, "p1", 120)),
    )
    again = CollectionMeta.from_json(meta.to_json())
    assert again == meta and again.partition("p1") == PartitionInfo(12, "p1", 120)
    old = json.loads(meta.to_json())
    del old["partitions"]
    legacy = CollectionMeta.from_json(json.dumps(old).encode())
    assert legacy.all_partitions() == (PartitionInfo(8, "_default", 99),)
    assert legacy.partition("p1") is None
