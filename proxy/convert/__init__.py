"""Conversions at the proxy edge: Milvus protobuf <-> Strata's domain and Arrow.

Protobuf stops here. Each module owns one direction of one concept:

* ``schema``: CreateCollection / DescribeCollection schemas;
* ``rows``: insert columns (``FieldData``) -> Arrow rows (``field_read``: one column's values);
* ``output``: Arrow result columns -> ``FieldData``, output field resolution;
* ``ids``: primary keys as ``IDs``;
* ``search``: ``SearchRequest`` -> ``SearchSpec``; ``search_checks``: the checks made once the
  index is known; ``templates``: a filter's template values;
* ``search_results``: search and query results;
* ``pkids``: search by primary keys (the keys, and their vectors as a placeholder group);
* ``nullvectors``: nullable vector fields (None vectors <-> Arrow nulls, ``valid_data``).

Everything is pure (no I/O) and raises ``InvalidArgument`` for client errors.
"""

from proxy.convert.ids import ids_from_proto, ids_to_proto
from proxy.convert.output import (
    OutputFields,
    column_to_field_data,
    resolve_output_fields,
    table_to_fields_data,
)
from proxy.convert.rows import insert_to_table
from proxy.convert.schema import (
    field_to_proto,
    schema_from_proto,
    schema_to_proto,
    validate_field_name,
)
from proxy.convert.search import SearchSpec, parse_bool, parse_search_request
from proxy.convert.search_results import (
    build_count_result,
    build_count_results,
    build_query_results,
    build_search_results,
    is_count_query,
)
from proxy.convert.templates import template_values, template_values_to_python

__all__ = [
    "OutputFields",
    "SearchSpec",
    "build_count_result",
    "build_count_results",
    "build_query_results",
    "build_search_results",
    "column_to_field_data",
    "field_to_proto",
    "ids_from_proto",
    "ids_to_proto",
    "insert_to_table",
    "is_count_query",
    "parse_bool",
    "parse_search_request",
    "resolve_output_fields",
    "schema_from_proto",
    "schema_to_proto",
    "table_to_fields_data",
    "template_values",
    "template_values_to_python",
    "validate_field_name",
]
