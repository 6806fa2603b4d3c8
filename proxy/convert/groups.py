"""A grouping search's per-hit group values: Arrow -> ``group_by_field_value``.

Milvus answers a search with ``group_by_field`` with one extra column,
``SearchResultData.group_by_field_value``: the group value of every hit, in
the flat hit order of ``ids``/``scores``, shaped like any result column
(``valid_data`` marks nulls of a nullable field). The Go SDK reads it;
pymilvus reads the group field from ``fields_data`` instead, which holds it
only when the client listed it in ``output_fields``.
"""

from __future__ import annotations

import pyarrow as pa
from pymilvus.grpc_gen import schema_pb2

from common.schema import CollectionSchema
from proxy.convert.output import column_to_field_data


def group_by_values(
    results: pa.Table | None, schema: CollectionSchema, group_by_field: str
) -> schema_pb2.FieldData:
    """The ``group_by_field_value`` column for reduced, grouped search hits.

    Args:
        results: the hits in the order ``build_search_results`` got them
            (sorted by query, then group), holding the ``group_by_field``
            column; ``None`` when nothing was searched.
        schema: the collection's schema.
        group_by_field: the request's group by field.

    Raises:
        ValueError: ``results`` lacks the group by column.
    """
    field = schema.field(group_by_field)
    if results is None:
        column: pa.Array | pa.ChunkedArray = pa.array([], type=field.arrow_type())
    elif group_by_field in results.column_names:
        column = results.column(group_by_field)
    else:
        raise ValueError(f"search results lack the group by column {group_by_field}")
    return column_to_field_data(field, column)
