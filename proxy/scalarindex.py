"""``create_index`` on a scalar, ARRAY or JSON field (or a dynamic-field key), as Milvus's proxy takes it.

The params are checked against the field (``segcore/index/scalar/spec.py``:
Milvus's index types and messages) before anything is written. An index on a
name that is no field of a collection with the dynamic field enabled is a
JSON index on ``$meta`` at that key (``json_path`` defaults to the key). A
JSON index without a name is named after its path (the ``json_path`` text),
so several paths of one JSON field each get their own index.
"""

from __future__ import annotations

from collections.abc import Mapping

from common.errors import InvalidArgument
from common.schema import CollectionSchema, DataType
from segcore.index.scalar.spec import flat_params, scalar_index_spec


def scalar_index_request(
    schema: CollectionSchema, field_name: str, index_name: str, params: Mapping[str, str]
) -> tuple[str, str, dict[str, str]]:
    """``(field_name, index_name, params)`` as the catalog keeps them, checked.

    Raises:
        InvalidArgument: no such field (nor dynamic key), or params the field cannot have (Milvus's words).
    """
    out = dict(params)
    out.setdefault("index_type", "AUTOINDEX")
    dynamic = schema.dynamic_field
    if not schema.has_field(field_name):
        if dynamic is None or not field_name:
            raise InvalidArgument(f"cannot create index on non-exist field: {field_name}")
        extra = flat_params(out)
        if not extra.get("json_path"):
            out["json_path"] = field_name
        field_name = dynamic.name
    field = schema.field(field_name)
    scalar_index_spec(schema, field_name, out)  # raises on what Milvus refuses
    if (field.dtype == DataType.JSON or field.is_dynamic) and not index_name:
        index_name = flat_params(out).get("json_path") or field_name
    return field_name, index_name, out
