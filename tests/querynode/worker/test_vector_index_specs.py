"""Workers build indexes on vector fields only; an index on another field (a catalog written before
the proxy refused them) is left out instead of failing every load."""

from __future__ import annotations

import pytest

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType, FieldSchema
from segcore.index.field_specs import vector_index_specs
from segcore.index.spec import IndexKind


def _schema() -> CollectionSchema:
    return CollectionSchema(
        name="c",
        fields=(
            FieldSchema(name="id", dtype=DataType.INT64, is_primary=True, field_id=100),
            FieldSchema(name="j", dtype=DataType.JSON, field_id=101),
            FieldSchema(name="v", dtype=DataType.FLOAT_VECTOR, dim=4, field_id=102),
        )
    )


def test_indexes_on_scalar_and_json_fields_are_left_out() -> None:
    specs = vector_index_specs(
        _schema(),
        [
            ("j", 1, {"index_type": "INVERTED", "json_path": "j['a']", "json_cast_type": "double"}),
            ("v", 2, {"index_type": "HNSW", "metric_type": "L2", "params": '{"M": 8}'}),
            ("gone", 3, {"index_type": "HNSW", "metric_type": "L2"}),
        ],
    )
    assert [(s.field_name, s.index_id, s.spec.kind) for s in specs] == [("v", 2, IndexKind.HNSW)]


def test_a_bad_vector_index_still_fails() -> None:
    with pytest.raises(InvalidArgument, match="index_type must be one of"):
        vector_index_specs(_schema(), [("v", 2, {"index_type": "IVF_XYZ", "metric_type": "L2"})])
