"""Collection functions (Milvus ``FunctionSchema``) and the text fields' analyzer settings.

A ``VARCHAR`` field takes, in its type params as pymilvus sends them,
``enable_analyzer`` ("true"), ``analyzer_params`` (JSON, ``analyzer.py``) and
``enable_match`` (``TEXT_MATCH`` / ``PHRASE_MATCH`` filters on it; needs
``enable_analyzer``).

The one function kind served is BM25: one ``VARCHAR`` input with
``enable_analyzer``, one ``SPARSE_FLOAT_VECTOR`` output that the server fills at
insert (``bm25.embed``) and that a client can neither write nor read back
(Milvus leaves function outputs out of query and search results).
"""

from __future__ import annotations

from collections.abc import Sequence

from pymilvus.grpc_gen import common_pb2, schema_pb2

from common.errors import InvalidArgument
from common.fulltext.analyzer import Analyzer, analyzer_for, build_analyzer
from common.schema import CollectionSchema, DataType, FieldSchema, FunctionSchema

BM25 = 1
ENABLE_ANALYZER = "enable_analyzer"
ANALYZER_PARAMS = "analyzer_params"
ENABLE_MATCH = "enable_match"
_KIND_NAMES = {0: "Unknown", 1: "BM25", 2: "TextEmbedding", 3: "Rerank"}


def _flag(field: FieldSchema, key: str) -> bool:
    return str(field.type_params.get(key, "false")).strip().lower() == "true"


def analyzer_enabled(field: FieldSchema) -> bool:
    return field.dtype == DataType.VARCHAR and _flag(field, ENABLE_ANALYZER)


def match_enabled(field: FieldSchema) -> bool:
    return field.dtype == DataType.VARCHAR and _flag(field, ENABLE_MATCH)


def field_analyzer(field: FieldSchema) -> Analyzer:
    """The analyzer of a text field (its ``analyzer_params``, else the standard one)."""
    return analyzer_for(field.type_params.get(ANALYZER_PARAMS))


def check_text_field(field: FieldSchema) -> None:
    """The analyzer settings of one field, checked as Milvus' proxy does; ``InvalidArgument`` else."""
    for key in (ENABLE_ANALYZER, ENABLE_MATCH):
        raw = field.type_params.get(key)
        if raw is not None and str(raw).strip().lower() not in ("true", "false"):
            raise InvalidArgument(f"{key} of field {field.name} must be true or false, got {raw!r}")
    wants = _flag(field, ENABLE_ANALYZER) or _flag(field, ENABLE_MATCH) or ANALYZER_PARAMS in field.type_params
    if wants and field.dtype != DataType.VARCHAR:
        raise InvalidArgument(f"only VARCHAR fields can enable an analyzer or text match, field {field.name} is not")
    if _flag(field, ENABLE_MATCH) and not _flag(field, ENABLE_ANALYZER):
        raise InvalidArgument(f"field {field.name} is set to enable match but not enable analyzer")
    if ANALYZER_PARAMS in field.type_params:
        build_analyzer(field.type_params[ANALYZER_PARAMS])


def functions_from_proto(
    functions: Sequence[schema_pb2.FunctionSchema], fields: Sequence[FieldSchema]
) -> tuple[FunctionSchema, ...]:
    """A CreateCollection's functions, checked against its (converted) fields."""
    by_name = {f.name: f for f in fields}
    out: list[FunctionSchema] = []
    names: set[str] = set()
    outputs: set[str] = set()
    for pb in functions:
        if not pb.name:
            raise InvalidArgument("function name cannot be empty")
        if pb.name in names:
            raise InvalidArgument(f"duplicate function name: {pb.name}")
        names.add(pb.name)
        if pb.type != BM25:
            kind = _KIND_NAMES.get(pb.type, str(pb.type))
            raise InvalidArgument(f"function type {kind} is not supported yet (function {pb.name})")
        if len(pb.input_field_names) != 1 or len(pb.output_field_names) != 1:
            raise InvalidArgument(
                f"BM25 function {pb.name} should have exactly one input field and one output field, got "
                f"{len(pb.input_field_names)} and {len(pb.output_field_names)}"
            )
        source, target = pb.input_field_names[0], pb.output_field_names[0]
        if source not in by_name:
            raise InvalidArgument(f"function input field not found: {source}")
        if target not in by_name:
            raise InvalidArgument(f"function output field not found: {target}")
        inp, res = by_name[source], by_name[target]
        if inp.dtype != DataType.VARCHAR:
            raise InvalidArgument(f"BM25 function input field must be a VARCHAR field, field {source} is not")
        if not analyzer_enabled(inp):
            raise InvalidArgument(f"BM25 function input field must set enable_analyzer to true, field {source}")
        if res.dtype != DataType.SPARSE_FLOAT_VECTOR:
            raise InvalidArgument(f"BM25 function output field must be a SPARSE_FLOAT_VECTOR field, field {target} is not")
        if res.is_primary or res.is_partition_key or res.nullable:
            raise InvalidArgument(f"function output field {target} cannot be primary, partition key or nullable")
        if target in outputs:
            raise InvalidArgument(f"field {target} is the output of more than one function")
        outputs.add(target)
        params = {kv.key: kv.value for kv in pb.params}
        out.append(FunctionSchema(name=pb.name, kind=BM25, description=pb.description, params=params,
                                  input_field_names=(source,), output_field_names=(target,)))
    for f in out:
        if f.input_field_names[0] in outputs:
            raise InvalidArgument(f"function output field {f.input_field_names[0]} cannot be a function input")
    return tuple(out)


def function_to_proto(fn: FunctionSchema, schema: CollectionSchema, function_id: int) -> schema_pb2.FunctionSchema:
    """A function as DescribeCollection reports it (field ids filled in)."""
    return schema_pb2.FunctionSchema(
        name=fn.name,
        id=function_id,
        description=fn.description,
        type=fn.kind,
        input_field_names=list(fn.input_field_names),
        input_field_ids=[schema.field(n).field_id for n in fn.input_field_names],
        output_field_names=list(fn.output_field_names),
        output_field_ids=[schema.field(n).field_id for n in fn.output_field_names],
        params=[common_pb2.KeyValuePair(key=k, value=v) for k, v in fn.params.items()],
    )


def bm25_outputs(schema: CollectionSchema) -> dict[str, str]:
    """BM25 output field -> its input text field."""
    return {f.output_field_names[0]: f.input_field_names[0] for f in schema.functions if f.kind == BM25}


def is_function_output(schema: CollectionSchema, name: str) -> bool:
    return any(name in f.output_field_names for f in schema.functions)


def bm25_analyzer(schema: CollectionSchema, output_field: str) -> Analyzer | None:
    """The analyzer of the text behind a BM25 output field; None when ``output_field`` is not one."""
    source = bm25_outputs(schema).get(output_field)
    return None if source is None else field_analyzer(schema.field(source))
