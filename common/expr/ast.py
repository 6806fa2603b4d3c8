"""The typed syntax tree of a filter expression bound to a collection schema.

``binder.py`` builds these nodes from the lark parse tree; ``evaluator.py``
evaluates them over Arrow tables. Every node is an immutable value, so an
expression can be cached, compared and shared between threads.

Two families of nodes:

* operands produce a value per row: ``Literal``, ``ListLiteral``,
  ``FieldRef`` (a scalar column), ``JsonPath`` (a value inside a JSON column
  or the dynamic field), ``ArrayRef`` (a whole ARRAY column),
  ``ArrayElement`` (``a[i]``), ``Arith`` and ``ArrayLength``;
* predicates (``Expr``) produce a boolean per row: ``Compare``, ``InList``,
  ``Like``, ``IsNull``, ``JsonContains``, ``Exists``, ``Not``, ``And``,
  ``Or`` and ``Const``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeAlias

from common.schema import DataType


class CompareOp(Enum):
    """A comparison operator, valued by its spelling."""

    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="

    @property
    def is_ordering(self) -> bool:
        return self not in (CompareOp.EQ, CompareOp.NE)


class ArithOp(Enum):
    """An arithmetic operator, valued by its spelling."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    POW = "**"


class ContainsMode(Enum):
    """Which ``json_contains*`` function a ``JsonContains`` node stands for."""

    ONE = "json_contains"
    ALL = "json_contains_all"
    ANY = "json_contains_any"


class ValueKind(Enum):
    """The static type of an operand, as far as the binder can tell."""

    INT = "integer"
    FLOAT = "float"
    NUMBER = "number"  # numeric, integer or float only known per row (JSON)
    STRING = "string"
    BOOL = "boolean"
    LIST = "list"
    ARRAY = "array"  # a whole ARRAY field; its elements have one known kind
    JSON = "json"  # any JSON value; its type is only known per row

    @property
    def is_numeric(self) -> bool:
        return self in (ValueKind.INT, ValueKind.FLOAT, ValueKind.NUMBER)


#: A constant: what a literal or a filter parameter may hold. Lists are tuples.
Constant: TypeAlias = bool | int | float | str | tuple[Any, ...]


# ---------------------------------------------------------------- operands


# Python has ``True == 1 == 1.0``; the filter language does not (``age / 2``
# is integer division, ``age / 2.0`` is not). Nodes holding constants
# therefore compare and hash by ``typed``, the constants' typed spelling,
# instead of by the raw values, so equal nodes always mean the same filter.


def _typed(node: Any, constants: Any) -> None:
    object.__setattr__(node, "typed", render_constant(constants))


@dataclass(frozen=True, slots=True, kw_only=True)
class Literal:
    """A scalar constant: ``3``, ``1.5``, ``"abc"``, ``true``."""

    value: bool | int | float | str = field(compare=False)
    typed: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _typed(self, self.value)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListLiteral:
    """A list constant ``[1, "a", [2]]``; nested lists are tuples."""

    values: tuple[Any, ...] = field(compare=False)
    typed: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _typed(self, self.values)


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRef:
    """A scalar schema field, read as its Arrow column."""

    name: str
    dtype: DataType


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonPath:
    """A value inside a JSON column: ``meta["a"][0]`` or ``$meta["x"]``.

    ``keys`` is empty for the whole document. String keys index objects,
    integer keys index arrays. ``dynamic`` marks the dynamic field, whose
    null rows read as an empty object.
    """

    field: str
    keys: tuple[str | int, ...]
    dynamic: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ArrayRef:
    """A whole ARRAY field, read as its Arrow ``list<element>`` column."""

    name: str
    element_type: DataType


@dataclass(frozen=True, slots=True, kw_only=True)
class ArrayElement:
    """``a[i]``: element ``i`` of an ARRAY field.

    It is absent on rows whose array has no element ``i``; every predicate
    reading an absent element is false there (even ``!=``, as in Milvus).
    """

    array: ArrayRef
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Arith:
    """``left op right`` on numbers."""

    op: ArithOp
    left: Operand
    right: Operand


@dataclass(frozen=True, slots=True, kw_only=True)
class ArrayLength:
    """``array_length(x)``: the length of an ARRAY field, or of a JSON array
    (absent where the JSON value is no array)."""

    path: JsonPath | ArrayRef


Operand: TypeAlias = Literal | ListLiteral | FieldRef | JsonPath | ArrayRef | ArrayElement | Arith | ArrayLength
OPERAND_TYPES = (Literal, ListLiteral, FieldRef, JsonPath, ArrayRef, ArrayElement, Arith, ArrayLength)
#: A column a filter reads: a scalar field, a JSON value, an ARRAY field.
Column: TypeAlias = FieldRef | JsonPath | ArrayRef


# -------------------------------------------------------------- predicates


@dataclass(frozen=True, slots=True, kw_only=True)
class Const:
    """A constant predicate, e.g. the filter ``true``."""

    value: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Compare:
    """``left op right``. Chained ranges are bound as ``And`` of two of these."""

    op: CompareOp
    left: Operand
    right: Operand


@dataclass(frozen=True, slots=True, kw_only=True)
class InList:
    """``operand in [values]``; ``not in`` is bound as ``Not(InList)``."""

    operand: Operand
    values: tuple[Any, ...] = field(compare=False)
    typed: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _typed(self, self.values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Like:
    """``operand like "pattern"`` with ``%`` (any run) and ``_`` (one char).

    A backslash makes the next pattern character literal.
    """

    operand: Operand
    pattern: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IsNull:
    """``operand is null``: a null field, or an absent or null JSON value."""

    operand: FieldRef | JsonPath | ArrayRef


@dataclass(frozen=True, slots=True, kw_only=True)
class JsonContains:
    """``json_contains(path, v)`` and its ``_all`` / ``_any`` siblings, on a
    JSON array or an ARRAY field (``array_contains*`` are the same functions).

    For ``ContainsMode.ONE`` ``values`` holds the single wanted element.
    """

    mode: ContainsMode
    path: JsonPath | ArrayRef
    values: tuple[Any, ...] = field(compare=False)
    typed: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _typed(self, self.values)


@dataclass(frozen=True, slots=True, kw_only=True)
class Exists:
    """``exists path``: the JSON value at ``path`` is present (even if null)."""

    path: JsonPath


@dataclass(frozen=True, slots=True, kw_only=True)
class TextMatch:
    """``TEXT_MATCH(field, 'words')`` (``slop`` None) or ``PHRASE_MATCH(field, 'words', slop)`` on a
    VARCHAR field with ``enable_match``; ``analyzer_params`` are the field's (``common/fulltext``)."""

    field: FieldRef
    query: str
    slop: int | None = None
    analyzer_params: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Not:
    operand: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class And:
    operands: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Or:
    operands: tuple[Expr, ...]


Expr: TypeAlias = Const | Compare | InList | Like | IsNull | JsonContains | Exists | TextMatch | Not | And | Or
EXPR_TYPES = (Const, Compare, InList, Like, IsNull, JsonContains, Exists, TextMatch, Not, And, Or)
Node: TypeAlias = Expr | Operand


# ----------------------------------------------------------------- queries

_FIELD_KINDS: dict[DataType, ValueKind] = {
    DataType.BOOL: ValueKind.BOOL,
    DataType.INT8: ValueKind.INT,
    DataType.INT16: ValueKind.INT,
    DataType.INT32: ValueKind.INT,
    DataType.INT64: ValueKind.INT,
    DataType.FLOAT: ValueKind.FLOAT,
    DataType.DOUBLE: ValueKind.FLOAT,
    DataType.VARCHAR: ValueKind.STRING,
    DataType.STRING: ValueKind.STRING,
}


def field_kind(dtype: DataType) -> ValueKind | None:
    """The kind of a scalar field type, or ``None`` if it cannot be filtered on."""
    return _FIELD_KINDS.get(dtype)


def operand_kind(operand: Operand) -> ValueKind:
    """The static type of ``operand``."""
    match operand:
        case Literal(value=bool()):
            return ValueKind.BOOL
        case Literal(value=int()):
            return ValueKind.INT
        case Literal(value=float()):
            return ValueKind.FLOAT
        case Literal():
            return ValueKind.STRING
        case ListLiteral():
            return ValueKind.LIST
        case FieldRef():
            return _FIELD_KINDS[operand.dtype]
        case JsonPath():
            return ValueKind.JSON
        case ArrayRef():
            return ValueKind.ARRAY
        case ArrayElement():
            return _FIELD_KINDS[operand.array.element_type]
        case ArrayLength():
            return ValueKind.INT
        case Arith():
            kinds = {operand_kind(operand.left), operand_kind(operand.right)}
            if ValueKind.NUMBER in kinds or ValueKind.JSON in kinds:
                return ValueKind.NUMBER
            if operand.op is ArithOp.POW or ValueKind.FLOAT in kinds:
                return ValueKind.FLOAT
            return ValueKind.INT


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of ``node``."""
    match node:
        case Arith():
            return (node.left, node.right)
        case ArrayLength() | JsonContains() | Exists():
            return (node.path,)
        case TextMatch():
            return (node.field,)
        case ArrayElement():
            return (node.array,)
        case Compare():
            return (node.left, node.right)
        case InList() | Like() | IsNull() | Not():
            return (node.operand,)
        case And() | Or():
            return node.operands
        case _:
            return ()


def iter_columns(node: Node) -> Iterator[Column]:
    """Every column read below ``node``, depth first, with repeats."""
    if isinstance(node, FieldRef | JsonPath | ArrayRef):
        yield node
        return
    for child in children(node):
        yield from iter_columns(child)


def iter_elements(node: Node) -> Iterator[ArrayElement]:
    """Every ``a[i]`` read below ``node``, depth first, with repeats."""
    if isinstance(node, ArrayElement):
        yield node
        return
    for child in children(node):
        yield from iter_elements(child)


def reads_json(node: Node) -> bool:
    """Whether ``node`` reads any JSON value (and so is evaluated row by row)."""
    return any(isinstance(c, JsonPath) for c in iter_columns(node))


def referenced_fields(expr: Node) -> set[str]:
    """The top-level column names ``expr`` reads, e.g. ``{"age", "$meta"}``."""
    return {c.field if isinstance(c, JsonPath) else c.name for c in iter_columns(expr)}


# --------------------------------------------------------------- rendering


def render_constant(value: Any) -> str:
    """A constant in filter syntax: ``true``, ``3``, ``"a"``, ``[1, "b"]``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        if all(type(v) is int for v in value):  # long lists of ids: one join, no call per element
            return "[" + ", ".join(map(repr, value)) + "]"
        return "[" + ", ".join(render_constant(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def render(node: Node) -> str:
    """``node`` in filter syntax, fully parenthesised where it nests.

    Parsing the result with the same schema yields an equal node.
    """
    match node:
        case Literal():
            return render_constant(node.value)
        case ListLiteral():
            return render_constant(node.values)
        case FieldRef():
            return node.name
        case JsonPath():
            return node.field + "".join(f"[{render_constant(k)}]" for k in node.keys)
        case ArrayRef():
            return node.name
        case ArrayElement():
            return f"{node.array.name}[{node.index}]"
        case Arith():
            return f"({render(node.left)} {node.op.value} {render(node.right)})"
        case ArrayLength():
            return f"array_length({render(node.path)})"
        case Const():
            return render_constant(node.value)
        case Compare():
            return f"{render(node.left)} {node.op.value} {render(node.right)}"
        case InList():
            return f"{render(node.operand)} in {render_constant(node.values)}"
        case Like():
            return f"{render(node.operand)} like {render_constant(node.pattern)}"
        case IsNull():
            return f"{render(node.operand)} is null"
        case JsonContains():
            arg = node.values[0] if node.mode is ContainsMode.ONE else node.values
            function = node.mode.value
            if isinstance(node.path, ArrayRef):
                function = function.replace("json_", "array_", 1)
            return f"{function}({render(node.path)}, {render_constant(arg)})"
        case Exists():
            return f"exists {render(node.path)}"
        case TextMatch() if node.slop is None:
            return f"TEXT_MATCH({render(node.field)}, {render_constant(node.query)})"
        case TextMatch():
            return f"PHRASE_MATCH({render(node.field)}, {render_constant(node.query)}, {node.slop})"
        case Not():
            return f"not ({render(node.operand)})"
        case And():
            return " and ".join(f"({render(o)})" for o in node.operands)
        case Or():
            return " or ".join(f"({render(o)})" for o in node.operands)
