"""Rows between Strata's Arrow types and Spark's.

Spark has no unsigned or fixed-size-list types, so rows cross into Spark as:

| Strata (Arrow) | Spark |
|---|---|
| ``fixed_size_list<float32>[dim]`` (FLOAT_VECTOR) | ``array<float>`` |
| ``fixed_size_binary[dim / 8]`` (BINARY_VECTOR) | ``binary`` (cast back; a row of another width fails the cast) |
| ``binary`` (SPARSE_FLOAT_VECTOR: packed pairs) | ``binary`` |
| ``fixed_size_binary[dim * 2]`` / ``[dim]`` (FLOAT16, BFLOAT16 / INT8_VECTOR) | ``binary`` (the same) |
| ``uint64`` (``_ts``) | ``bigint`` (hybrid timestamps are below 2^63) |
| every other type of ``CollectionSchema.arrow_schema()`` | the matching Spark type |

``to_spark`` converts a table for ``mapInArrow``/``applyInArrow`` results;
``from_spark`` converts a batch Spark hands back into the schema's Arrow types.
Pure functions, no Spark import: executors call them inside Arrow UDFs.
"""

from __future__ import annotations

import pyarrow as pa

from common.schema import TIMESTAMP_COLUMN, CollectionSchema


def spark_arrow_type(arrow_type: pa.DataType) -> pa.DataType:
    """The Arrow type Spark accepts for a column of ``arrow_type``."""
    if pa.types.is_fixed_size_list(arrow_type):
        return pa.list_(spark_arrow_type(arrow_type.value_type))
    if pa.types.is_list(arrow_type):
        return pa.list_(spark_arrow_type(arrow_type.value_type))
    if pa.types.is_fixed_size_binary(arrow_type):
        return pa.binary()
    if pa.types.is_uint64(arrow_type):
        return pa.int64()
    return arrow_type


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, spark_arrow_type(f.type), nullable=f.nullable) for f in schema])


def spark_ddl(schema: pa.Schema) -> str:
    """A Spark DDL string (``\\`a\\` bigint, ...``) for the Spark form of ``schema``."""
    return ", ".join(f"`{f.name}` {_ddl_type(spark_arrow_type(f.type))}" for f in schema)


def _ddl_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"array<{_ddl_type(t.value_type)}>"
    simple = {
        pa.bool_(): "boolean",
        pa.int8(): "tinyint",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.float32(): "float",
        pa.float64(): "double",
        pa.string(): "string",
        pa.large_string(): "string",
        pa.binary(): "binary",
    }
    for arrow, ddl in simple.items():
        if t == arrow:
            return ddl
    raise ValueError(f"no Spark type for Arrow type {t}")


def to_spark(table: pa.Table, schema: pa.Schema | None = None) -> pa.Table:
    """``table`` (optionally reordered to ``schema``'s columns) with Spark-compatible types."""
    if schema is not None:
        table = table.select(schema.names)
    return table.cast(spark_arrow_schema(table.schema))


def from_spark(table: pa.Table | pa.RecordBatch, schema: pa.Schema) -> pa.Table:
    """A table Spark produced, cast to ``schema`` (the names must match; extra columns are dropped)."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    return table.select(schema.names).cast(schema)


def rows_schema(schema: CollectionSchema) -> pa.Schema:
    """The stored rows' Arrow schema (user fields, then ``_ts``): what segment readers return."""
    return schema.arrow_schema()


def rows_ddl(schema: CollectionSchema) -> str:
    return spark_ddl(rows_schema(schema))


__all__ = [
    "TIMESTAMP_COLUMN",
    "from_spark",
    "rows_ddl",
    "rows_schema",
    "spark_arrow_schema",
    "spark_arrow_type",
    "spark_ddl",
    "to_spark",
]
