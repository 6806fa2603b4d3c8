"""Shared fixtures for the growing-store tests: schemas and a batch builder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema

DIM = 8

BatchFactory = Callable[..., pa.Table]


def build_schema(
    pk_type: DataType, *, dim: int = DIM, nullable_vector: bool = False
) -> CollectionSchema:
    pk = FieldSchema(
        field_id=100,
        name="pk",
        dtype=pk_type,
        is_primary=True,
        max_length=64 if pk_type == DataType.VARCHAR else 0,
    )
    return CollectionSchema(
        name="c",
        fields=(
            pk,
            FieldSchema(
                field_id=101,
                name="vec",
                dtype=DataType.FLOAT_VECTOR,
                dim=dim,
                nullable=nullable_vector,
            ),
            FieldSchema(field_id=102, name="label", dtype=DataType.VARCHAR, max_length=64),
            FieldSchema(field_id=103, name="seq", dtype=DataType.INT64),
        ),
    )


@pytest.fixture
def dim() -> int:
    """Dimension of ``vec`` in every schema built here."""
    return DIM


@pytest.fixture
def nullable_vector_schema() -> CollectionSchema:
    return build_schema(DataType.INT64, nullable_vector=True)


@pytest.fixture
def int_schema() -> CollectionSchema:
    return build_schema(DataType.INT64)


@pytest.fixture
def str_schema() -> CollectionSchema:
    return build_schema(DataType.VARCHAR)


@pytest.fixture(params=[DataType.INT64, DataType.VARCHAR], ids=["int64", "varchar"])
def any_schema(request: pytest.FixtureRequest) -> CollectionSchema:
    return build_schema(request.param)


@pytest.fixture
def make_batch() -> BatchFactory:
    """``make_batch(schema, pks, ts, vectors=None, seq=None)``: one insert batch.

    Integer ``pks`` become strings ``"k<n>"`` for a VARCHAR key. ``label`` is
    ``"l<pk>"`` so tests can check that output columns stay aligned with keys.
    """

    def factory(
        schema: CollectionSchema,
        pks: Sequence[Any],
        ts: int,
        vectors: np.ndarray | Sequence[Any] | None = None,
        seq: Sequence[int] | None = None,
    ) -> pa.Table:
        keys = pk_values(schema, pks)
        dim = schema.field("vec").dim
        if vectors is None:
            rng = np.random.default_rng(len(keys) * 7919 + ts)
            vectors = rng.standard_normal((len(keys), dim)).astype(np.float32)
        vec_list = [None if v is None else list(map(float, v)) for v in vectors]
        return pa.table(
            {
                "pk": pa.array(keys, schema.field("pk").arrow_type()),
                "vec": pa.array(vec_list, pa.list_(pa.float32(), dim)),
                "label": [f"l{k}" for k in keys],
                "seq": pa.array(list(seq) if seq is not None else [0] * len(keys), pa.int64()),
                TIMESTAMP_COLUMN: pa.array([ts] * len(keys), pa.uint64()),
            }
        )

    return factory


def pk_values(schema: CollectionSchema, pks: Sequence[Any]) -> list[Any]:
    if schema.primary_field.dtype == DataType.VARCHAR:
        return [k if isinstance(k, str) else f"k{k}" for k in pks]
    return [int(k) for k in pks]


@pytest.fixture
def keys() -> Callable[[CollectionSchema, Sequence[Any]], pa.Array]:
    """``keys(schema, pks)``: primary keys as an Arrow array of the schema's key type."""

    def factory(schema: CollectionSchema, pks: Sequence[Any]) -> pa.Array:
        return pa.array(pk_values(schema, pks), schema.field("pk").arrow_type())

    return factory
