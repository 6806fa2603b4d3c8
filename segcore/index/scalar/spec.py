"""Scalar index definitions: Milvus's index types, parameters and refusals, per field type.

| index_type | fields (Milvus 2.6) | params |
|---|---|---|
| ``INVERTED`` | BOOL, integers, FLOAT/DOUBLE, VARCHAR, ARRAY, JSON (a path) | JSON: ``json_path``, ``json_cast_type``, ``json_cast_function`` |
| ``STL_SORT`` | integers, FLOAT/DOUBLE, VARCHAR | |
| ``BITMAP`` | BOOL, integers, VARCHAR, ARRAY of those; not the primary key | |
| ``Trie`` | VARCHAR | |
| ``NGRAM`` | VARCHAR, JSON (a VARCHAR path) | ``min_gram``, ``max_gram`` (required, 1 <= min <= max) |
| ``AUTOINDEX`` | every scalar type: BITMAP for BOOL, HYBRID (BITMAP or INVERTED by cardinality) for integers and VARCHAR, INVERTED for floats, by element type for ARRAY; JSON needs a cast type | |

A JSON index names a path inside the field (``json_path``, filter syntax:
``meta["a"]["b"]``; default the whole field) and how values there are read
(``json_cast_type``: BOOL, DOUBLE, VARCHAR, ARRAY_BOOL, ARRAY_DOUBLE,
ARRAY_VARCHAR; any case). A row whose value at the path is not of that type
is not in the index. Keys of the dynamic field are indexed the same way, on
the field ``$meta``.

Every index kind is built as the same ``Postings`` structure (``postings.py``)
and answers exactly the filters the column scan answers; the kinds differ in
the field types they accept, as in Milvus, and ``NGRAM`` adds n-gram lists
for ``like "%x%"``.
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from common.errors import InvalidArgument
from common.expr.ast import JsonPath
from common.schema import CollectionSchema, DataType, FieldSchema

_META_KEYS = {"index_type", "metric_type", "params"}
_SUFFIX = ": invalid parameter[expected=valid index params][actual=invalid index params]"
_INTEGERS = (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)
_FLOATS = (DataType.FLOAT, DataType.DOUBLE)
_STRINGS = (DataType.VARCHAR, DataType.STRING)
#: Milvus's names of the data types in its messages (``schemapb.DataType.String()``).
_TYPE_NAMES = {DataType.BOOL: "Bool", DataType.INT8: "Int8", DataType.INT16: "Int16", DataType.INT32: "Int32",
               DataType.INT64: "Int64", DataType.FLOAT: "Float", DataType.DOUBLE: "Double",
               DataType.VARCHAR: "VarChar", DataType.STRING: "String", DataType.ARRAY: "Array",
               DataType.JSON: "JSON"}


class ScalarKind(enum.Enum):
    INVERTED = "INVERTED"
    STL_SORT = "STL_SORT"
    BITMAP = "BITMAP"
    TRIE = "Trie"
    NGRAM = "NGRAM"
    HYBRID = "HYBRID"  # AUTOINDEX of integers and strings: BITMAP or INVERTED by cardinality


class JsonCast(enum.Enum):
    BOOL = "BOOL"
    DOUBLE = "DOUBLE"
    VARCHAR = "VARCHAR"
    ARRAY_BOOL = "ARRAY_BOOL"
    ARRAY_DOUBLE = "ARRAY_DOUBLE"
    ARRAY_VARCHAR = "ARRAY_VARCHAR"

    @property
    def is_array(self) -> bool:
        return self.name.startswith("ARRAY_")

    @property
    def element(self) -> JsonCast:
        return JsonCast[self.name.removeprefix("ARRAY_")]


SCALAR_INDEX_TYPES = frozenset({"INVERTED", "STL_SORT", "BITMAP", "TRIE", "NGRAM", "AUTOINDEX"})
_VECTOR_INDEX_TYPES = frozenset({"FLAT", "HNSW", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "IVF_RABITQ", "SCANN", "HNSW_SQ",
                                 "HNSW_PQ", "HNSW_PRQ", "DISKANN", "BIN_FLAT", "BIN_IVF_FLAT",
                                 "SPARSE_INVERTED_INDEX", "SPARSE_WAND"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ScalarIndexSpec:
    """One scalar index: its kind, the field (and JSON path) it covers, how JSON values are cast."""

    index_type: str  # as the user named it (upper case; ``Trie`` as Milvus spells it)
    kind: ScalarKind
    field_name: str
    dtype: DataType
    element_type: DataType = DataType.NONE
    json_path: JsonPath | None = None
    json_cast: JsonCast | None = None
    json_cast_function: str = ""
    min_gram: int = 0
    max_gram: int = 0

    def describe(self) -> dict[str, object]:
        """What identifies the index's saved data (its meta file compares it)."""
        return {
            "index_type": self.index_type,
            "kind": self.kind.value,
            "field": self.field_name,
            "json_path": None if self.json_path is None else [self.json_path.field, list(self.json_path.keys)],
            "json_cast": None if self.json_cast is None else self.json_cast.value,
            "json_cast_function": self.json_cast_function,
            "grams": [self.min_gram, self.max_gram],
        }


def flat_params(params: Mapping[str, str]) -> dict[str, str]:
    """Catalog params with the ``params`` JSON object merged into the top level."""
    out = {k: str(v) for k, v in params.items() if k not in _META_KEYS}
    raw = params.get("params", "")
    if raw:
        try:
            extra = json.loads(raw)
        except ValueError as err:
            raise InvalidArgument(f"invalid index params: params is not a JSON object: {raw!r}") from err
        if not isinstance(extra, dict):
            raise InvalidArgument(f"invalid index params: params is not a JSON object: {raw!r}")
        out.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in extra.items()})
    return out


def is_scalar_index_type(index_type: str) -> bool:
    return index_type.strip().upper() in SCALAR_INDEX_TYPES


def _invalid(message: str) -> InvalidArgument:
    return InvalidArgument(message + _SUFFIX)


def _type_name(dtype: DataType) -> str:
    return _TYPE_NAMES.get(dtype, dtype.name)


def scalar_index_spec(schema: CollectionSchema, field_name: str, params: Mapping[str, str]) -> ScalarIndexSpec:
    """The index ``params`` (catalog form) define on ``field_name``, checked as Milvus's proxy checks it.

    Raises:
        InvalidArgument: an index type the field's type cannot have, a JSON index without a valid
            ``json_cast_type`` or ``json_path``, bad n-gram sizes; Milvus's words.
    """
    field = schema.field(field_name)
    index_type = (params.get("index_type", "") or "AUTOINDEX").strip().upper()
    extra = flat_params(params)
    if index_type in _VECTOR_INDEX_TYPES:
        raise _invalid(f"index {index_type} only supports vector data type")
    if index_type not in SCALAR_INDEX_TYPES:
        raise InvalidArgument(f"invalid index type: {params.get('index_type')}: invalid parameter")
    dtype, element = field.dtype, field.element_type
    json_field = dtype == DataType.JSON or field.is_dynamic
    kind = _kind(index_type, field)
    if json_field:
        return _json_spec(schema, field, index_type, kind, extra)
    min_gram, max_gram = _grams(extra) if kind is ScalarKind.NGRAM else (0, 0)
    return ScalarIndexSpec(index_type="Trie" if index_type == "TRIE" else index_type, kind=kind,
                           field_name=field.name, dtype=dtype, element_type=element,
                           min_gram=min_gram, max_gram=max_gram)


def _kind(index_type: str, field: FieldSchema) -> ScalarKind:
    dtype = DataType.JSON if field.is_dynamic else field.dtype
    element = field.element_type
    match index_type:
        case "INVERTED":
            if dtype not in (DataType.BOOL, *_INTEGERS, *_FLOATS, *_STRINGS, DataType.ARRAY, DataType.JSON):
                raise _invalid(f"INVERTED are not supported on {_type_name(dtype)} field")
            return ScalarKind.INVERTED
        case "STL_SORT":
            if dtype not in (*_INTEGERS, *_FLOATS, *_STRINGS):
                raise _invalid(f"STL_SORT are only supported on numeric or varchar field, got {_type_name(dtype)}")
            return ScalarKind.STL_SORT
        case "BITMAP":
            if field.is_primary:
                raise _invalid("create bitmap index on primary key not supported")
            if dtype not in (DataType.BOOL, *_INTEGERS, *_STRINGS, DataType.ARRAY):
                raise _invalid("bitmap index are only supported on bool, int, string and array field")
            if dtype == DataType.ARRAY and element not in (DataType.BOOL, *_INTEGERS, *_STRINGS):
                raise _invalid("bitmap index are only supported on bool, int, string for array field")
            return ScalarKind.BITMAP
        case "TRIE":
            if dtype not in _STRINGS:
                raise _invalid("TRIE are only supported on varchar field")
            return ScalarKind.TRIE
        case "NGRAM":
            if dtype not in (*_STRINGS, DataType.JSON):
                raise InvalidArgument("Ngram index can only be created on VARCHAR or JSON field: invalid parameter")
            return ScalarKind.NGRAM
        case _:  # AUTOINDEX, by type as Milvus's scalar auto index does
            base = element if dtype == DataType.ARRAY else dtype
            if dtype == DataType.JSON or base == DataType.BOOL:
                return ScalarKind.INVERTED if dtype == DataType.JSON else ScalarKind.BITMAP
            if base in _FLOATS:
                return ScalarKind.INVERTED
            if base in (*_INTEGERS, *_STRINGS):
                return ScalarKind.HYBRID
            raise InvalidArgument(
                f"create auto index on type:{_type_name(dtype)} is not supported: invalid parameter"
            )


def _grams(extra: Mapping[str, str]) -> tuple[int, int]:
    if "min_gram" not in extra or "max_gram" not in extra:
        raise InvalidArgument("Ngram index must specify both min_gram and max_gram: invalid parameter")
    values = []
    for key in ("min_gram", "max_gram"):
        try:
            values.append(int(extra[key]))
        except ValueError as err:
            raise InvalidArgument(
                f"{key} for Ngram index must be an integer, got: {extra[key]}: invalid parameter"
            ) from err
    low, high = values
    if low <= 0 or high <= 0 or low > high:
        raise InvalidArgument(
            f"invalid min_gram or max_gram value for Ngram index, min_gram: {low}, max_gram: {high}: invalid parameter"
        )
    return low, high


def _json_spec(
    schema: CollectionSchema, field: FieldSchema, index_type: str, kind: ScalarKind, extra: Mapping[str, str]
) -> ScalarIndexSpec:
    if kind in (ScalarKind.STL_SORT, ScalarKind.BITMAP, ScalarKind.TRIE):
        raise _invalid(f"{index_type} are not supported on JSON field")
    raw_cast = extra.get("json_cast_type", "")
    if not raw_cast:
        if kind is ScalarKind.NGRAM:
            raise InvalidArgument("JSON field with ngram index must specify json_cast_type: invalid parameter")
        raise InvalidArgument("json index must specify cast type: missing parameter[json_cast_type]")
    try:
        cast = JsonCast(raw_cast.strip().upper())
    except ValueError:
        raise InvalidArgument(f"json_cast_type {raw_cast} is not supported: invalid parameter") from None
    if kind is ScalarKind.NGRAM and cast is not JsonCast.VARCHAR:
        raise InvalidArgument(
            f"JSON field with ngram index only supports VARCHAR cast type, got: {cast.value}: invalid parameter"
        )
    function = extra.get("json_cast_function", "")
    if function:
        if function.upper() != "STRING_TO_DOUBLE":
            raise InvalidArgument(f"json_cast_function {function} is not supported: invalid parameter")
        if cast is not JsonCast.DOUBLE:
            raise InvalidArgument(
                f"json_cast_function {function} is not supported for json_cast_type {cast.value}: invalid parameter"
            )
        function = "STRING_TO_DOUBLE"
    path = parse_json_path(schema, field, extra.get("json_path", "") or field.name)
    min_gram, max_gram = _grams(extra) if kind is ScalarKind.NGRAM else (0, 0)
    return ScalarIndexSpec(index_type=index_type, kind=ScalarKind.INVERTED if kind is ScalarKind.HYBRID else kind,
                           field_name=field.name, dtype=DataType.JSON, json_path=path, json_cast=cast,
                           json_cast_function=function, min_gram=min_gram, max_gram=max_gram)


_NAME = re.compile(r"\s*([A-Za-z_$][A-Za-z0-9_$]*)")
_KEY = re.compile(r"""\s*\[\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|-?\d+)\s*\]""")


def parse_json_path(schema: CollectionSchema, field: FieldSchema, text: str) -> JsonPath:
    """``text`` (filter syntax, ``meta["a"][0]``; a dynamic key ``k`` or ``$meta["k"]``) as a path of ``field``,
    the ``JsonPath`` the filter binder makes of it.

    A small parser of its own, not the filter grammar: it also runs inside Spark jobs, whose code is
    a zip the grammar file cannot be read from.
    """
    match = _NAME.match(text)
    if match is None:
        raise InvalidArgument(f"json_path {text} is not a valid path of field {field.name}: invalid parameter")
    name, keys, position = match.group(1), [], match.end()
    while position < len(text.rstrip()):
        key = _KEY.match(text, position)
        if key is None:
            raise InvalidArgument(f"json_path {text} is not a valid path of field {field.name}: invalid parameter")
        token = key.group(1)
        keys.append(ast.literal_eval(token) if token[0] in "\"'" else int(token))
        position = key.end()
    if schema.has_field(name):
        named = schema.field(name)
        path = JsonPath(field=name, keys=tuple(keys), dynamic=named.is_dynamic)
    elif field.is_dynamic:
        path = JsonPath(field=field.name, keys=(name, *keys), dynamic=True)
    else:
        raise InvalidArgument(f"json_path {text} is not a path of field {field.name}: invalid parameter")
    if path.field != field.name or (not path.keys and not field.is_dynamic and field.dtype != DataType.JSON):
        raise InvalidArgument(f"json_path {text} is not a path of field {field.name}: invalid parameter")
    return path
