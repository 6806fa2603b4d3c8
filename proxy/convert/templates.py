"""A filter's template values (``expr_template_values``: the ``{name}`` values of a filter) as Python values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymilvus.grpc_gen import schema_pb2

from common.errors import InvalidArgument
from common.jsonvalue import load_json


def template_values_to_python(values: Mapping[str, schema_pb2.TemplateValue]) -> dict[str, Any]:
    """A filter's ``{name}`` values (``expr_template_values``) as Python values."""
    return {name: _template_value(value) for name, value in values.items()}


def _template_value(value: schema_pb2.TemplateValue) -> Any:
    which = value.WhichOneof("val")
    if which is None:
        raise InvalidArgument("a filter template value is empty")
    if which == "array_val":
        return _template_array(value.array_val)
    return getattr(value, which)


def _template_array(array: schema_pb2.TemplateArrayValue) -> list[Any]:
    which = array.WhichOneof("data")
    if which is None:
        return []
    if which == "array_data":
        return [_template_array(item) for item in array.array_data.data]
    if which == "json_data":
        try:
            return [load_json(item) for item in array.json_data.data]
        except ValueError as err:
            raise InvalidArgument(f"a filter template value is not valid JSON: {err}") from None
    return list(getattr(array, which).data)


# Shorter names the proxy service uses.
template_values = template_values_to_python
