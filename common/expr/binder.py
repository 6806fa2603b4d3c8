"""Bind a lark parse tree to a collection schema, producing the typed AST.

The binder resolves names (schema field, JSON field, dynamic key), fills
``{placeholders}`` from the filter parameters, checks operand types, folds
constant sub-expressions and rewrites sugar (chained ranges, ``not in``,
bare boolean fields) into the core nodes of ``ast.py``. Every problem is an
``IllegalFilter`` naming the offending field, value or operator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
from lark import Token, Transformer, v_args

from common.errors import IllegalFilter
from common.expr import semantics
from common.expr.ast import (
    EXPR_TYPES,
    And,
    Arith,
    ArithOp,
    ArrayElement,
    ArrayLength,
    ArrayRef,
    Compare,
    CompareOp,
    Const,
    ContainsMode,
    Exists,
    Expr,
    FieldRef,
    InList,
    IsNull,
    JsonContains,
    JsonPath,
    Like,
    ListLiteral,
    Literal,
    Node,
    Not,
    Operand,
    Or,
    ValueKind,
    field_kind,
    operand_kind,
    render,
    render_constant,
)
from common.expr.literals import _INT_LIMIT, _parse_float, _parse_int, describe, quote, unquote
from common.expr.rewrite import equalities_as_in
from common.expr.text_predicates import TEXT_FUNCTIONS, bind_text_match
from common.schema import DYNAMIC_FIELD_NAME, CollectionSchema, DataType

_COMPARE_OPS = {op.value: op for op in CompareOp}
_ARITH_OPS = {op.value: op for op in ArithOp}
_CONTAINS_FUNCTIONS = {
    "json_contains": ContainsMode.ONE,
    "json_contains_all": ContainsMode.ALL,
    "json_contains_any": ContainsMode.ANY,
    "array_contains": ContainsMode.ONE,
    "array_contains_all": ContainsMode.ALL,
    "array_contains_any": ContainsMode.ANY,
}
# How deeply lists in a filter parameter may nest; as deep as a list literal can.
_PARAM_DEPTH = 120


def _constant(value: Any, name: str, depth: int = 1) -> Any:
    """A filter parameter as a constant (lists become tuples, nested at most ``_PARAM_DEPTH`` deep)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | float | str):
        return value
    if isinstance(value, int):
        if not -_INT_LIMIT <= value < _INT_LIMIT:
            raise IllegalFilter(f"placeholder {{{name}}}: integer {value} is out of the int64 range")
        return value
    if isinstance(value, list | tuple) and value and all(type(v) is int for v in value):
        if min(value) >= -_INT_LIMIT and max(value) < _INT_LIMIT:  # a long list of ids: no call per id
            return tuple(value)
    if isinstance(value, list | tuple | np.ndarray):
        if depth > _PARAM_DEPTH:
            raise IllegalFilter(f"placeholder {{{name}}} holds lists nested more than {_PARAM_DEPTH} levels deep")
        return tuple(_constant(v, name, depth + 1) for v in value)
    raise IllegalFilter(f"placeholder {{{name}}} has a value of unsupported type {type(value).__name__}")


def _constant_node(value: Any) -> Literal | ListLiteral:
    return ListLiteral(values=value) if isinstance(value, tuple) else Literal(value=value)


def _combine(cls: type[And | Or], items: Sequence[Expr]) -> Expr:
    """``And``/``Or`` of ``items``, flattened, with constants folded away."""
    absorbing = cls is Or  # `x or true` is true; `x and false` is false
    out: list[Expr] = []
    for item in items:
        for sub in item.operands if isinstance(item, cls) else (item,):
            if isinstance(sub, Const):
                if sub.value == absorbing:
                    return Const(value=absorbing)
                continue
            out.append(sub)
    if not out:
        return Const(value=not absorbing)
    if cls is Or:
        out = equalities_as_in(out)
    return out[0] if len(out) == 1 else cls(operands=tuple(out))


def _negate(expr: Expr) -> Expr:
    return Const(value=not expr.value) if isinstance(expr, Const) else Not(operand=expr)


def _check_element(array: ArrayRef, value: Any) -> None:
    """``value`` can equal an element of ``array`` (numbers, strings, booleans each among themselves)."""
    if isinstance(value, tuple):
        raise IllegalFilter(f"{describe(array)} holds no lists, so it cannot hold {describe(_constant_node(value))}")
    constant = _constant_node(value)
    ek, vk = field_kind(array.element_type), operand_kind(constant)
    if ek is None or (ek is not vk and not (ek.is_numeric and vk.is_numeric)):
        raise IllegalFilter(
            f"cannot compare the {array.element_type.name} elements of {describe(array)} with {describe(constant)}"
        )


def _check_array_comparable(op: CompareOp, left: Operand, right: Operand) -> None:
    """A whole ARRAY field only compares for (in)equality with a list of its element type."""
    array, other = (left, right) if isinstance(left, ArrayRef) else (right, left)
    assert isinstance(array, ArrayRef)
    if not isinstance(other, ListLiteral):
        raise IllegalFilter(f"cannot compare {describe(left)} with {describe(right)}")
    if op.is_ordering:
        raise IllegalFilter(f"operator '{op.value}' cannot be applied to {describe(array)}")
    for value in other.values:
        _check_element(array, value)


def _check_comparable(op: CompareOp, left: Operand, right: Operand) -> None:
    lk, rk = operand_kind(left), operand_kind(right)
    kinds = {lk, rk}
    if ValueKind.ARRAY in kinds:
        _check_array_comparable(op, left, right)
        return
    if ValueKind.LIST in kinds:
        compatible, bad_op = kinds <= {ValueKind.LIST, ValueKind.JSON}, op.is_ordering
    elif ValueKind.JSON in kinds:
        compatible, bad_op = True, op.is_ordering and ValueKind.BOOL in kinds
    elif lk.is_numeric and rk.is_numeric:
        compatible, bad_op = True, False
    else:
        compatible, bad_op = lk is rk, lk is ValueKind.BOOL and op.is_ordering
    if not compatible:
        raise IllegalFilter(f"cannot compare {describe(left)} with {describe(right)}")
    if bad_op:
        culprit = left if lk in (ValueKind.LIST, ValueKind.BOOL) else right
        raise IllegalFilter(f"operator '{op.value}' cannot be applied to {describe(culprit)}")


def _compare(op: CompareOp, left: Operand, right: Operand) -> Expr:
    _check_comparable(op, left, right)
    if isinstance(left, Literal | ListLiteral) and isinstance(right, Literal | ListLiteral):
        lv = left.value if isinstance(left, Literal) else left.values
        rv = right.value if isinstance(right, Literal) else right.values
        return Const(value=semantics.compare(op, lv, rv))
    return Compare(op=op, left=left, right=right)


def _as_operand(node: Node) -> Operand:
    if isinstance(node, EXPR_TYPES):
        raise IllegalFilter(f"a boolean expression cannot be used as a value: `{quote(render(node))}`")
    return node


def _as_predicate(node: Node) -> Expr:
    if isinstance(node, EXPR_TYPES):
        return node
    match node:
        case Literal(value=bool(value)):
            return Const(value=value)
        case FieldRef(dtype=DataType.BOOL) | JsonPath() | ArrayElement(array=ArrayRef(element_type=DataType.BOOL)):
            return Compare(op=CompareOp.EQ, left=node, right=Literal(value=True))
        case _:
            raise IllegalFilter(f"{describe(node)} is not a boolean expression")


def _as_json_path(node: Node, what: str) -> JsonPath:
    if not isinstance(node, JsonPath):
        raise IllegalFilter(f'{what} needs a JSON value such as meta["key"], got {describe(node)}')
    return node


def _as_container(node: Node, what: str) -> JsonPath | ArrayRef:
    if not isinstance(node, JsonPath | ArrayRef):
        raise IllegalFilter(f'{what} needs an ARRAY field or a JSON value such as meta["key"], got {describe(node)}')
    return node


def _check_numeric(node: Operand, op: str) -> None:
    kind = operand_kind(node)
    if not (kind.is_numeric or kind is ValueKind.JSON):
        raise IllegalFilter(f"arithmetic operator '{op}' cannot be applied to {describe(node)}")


@v_args(inline=True)
class Binder(Transformer[Token, Any]):
    """Transforms one parse tree; make a new binder per expression."""

    def __init__(self, schema: CollectionSchema, params: Mapping[str, Any]) -> None:
        super().__init__(visit_tokens=False)
        self._schema = schema
        self._params = params

    # ------------------------------------------------------------ logic

    def start(self, node: Node) -> Expr:
        return _as_predicate(node)

    def or_expr(self, *nodes: Node) -> Expr:
        return _combine(Or, [_as_predicate(n) for n in nodes])

    def and_expr(self, *nodes: Node) -> Expr:
        return _combine(And, [_as_predicate(n) for n in nodes])

    def not_(self, node: Node) -> Expr:
        return _negate(_as_predicate(node))

    # ------------------------------------------------------- predicates

    def compare(self, *items: Node | Token) -> Expr:
        operands = [_as_operand(cast(Node, n)) for n in items[0::2]]  # the grammar alternates operand, operator
        ops = [_COMPARE_OPS[str(t)] for t in items[1::2]]
        if len(ops) == 1:
            return _compare(ops[0], operands[0], operands[1])
        ascending = {CompareOp.LT, CompareOp.LE}
        descending = {CompareOp.GT, CompareOp.GE}
        if len(ops) > 2 or not (set(ops) <= ascending or set(ops) <= descending):
            spelled = " ".join(op.value for op in ops)
            raise IllegalFilter(
                f"chained comparison with {spelled!r} is not a range; write it like `1 < a <= 5` or `10 > a >= 2`"
            )
        first = _compare(ops[0], operands[0], operands[1])
        second = _compare(ops[1], operands[1], operands[2])
        return _combine(And, [first, second])

    def in_(self, node: Node, values_node: Node) -> Expr:
        operand, values = _as_operand(node), _as_operand(values_node)
        if not isinstance(values, ListLiteral):
            raise IllegalFilter(f"'in' needs a list on its right side, got {describe(values)}")
        if isinstance(operand, ArrayRef):
            raise IllegalFilter(
                f"'in' cannot be applied to {describe(operand)}; "
                f"use array_contains_any({operand.name}, [...]) or an element such as {operand.name}[0]"
            )
        if operand_kind(operand) is not ValueKind.JSON:
            # Whether a constant compares with the operand depends on its type only: checking the
            # first of each type, in order, finds the first one that does not (as checking all would).
            first_of_type: dict[type, int] = {}
            for i, value in enumerate(values.values):
                first_of_type.setdefault(type(value), i)
            for i in sorted(first_of_type.values()):
                _check_comparable(CompareOp.EQ, operand, _constant_node(values.values[i]))
        if isinstance(operand, Literal | ListLiteral):
            constant = operand.value if isinstance(operand, Literal) else operand.values
            return Const(value=constant in semantics.ValueSet(values.values))
        return InList(operand=operand, values=values.values)

    def not_in(self, node: Node, values_node: Node) -> Expr:
        return _negate(self.in_(node, values_node))

    def like(self, node: Node, pattern_node: Node) -> Expr:
        operand, pattern = _as_operand(node), _as_operand(pattern_node)
        if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
            raise IllegalFilter(f"the pattern of 'like' must be a string, got {describe(pattern)}")
        if operand_kind(operand) not in (ValueKind.STRING, ValueKind.JSON):
            raise IllegalFilter(f"'like' cannot be applied to {describe(operand)}")
        if isinstance(operand, Literal):
            regex = semantics.like_regex(pattern.value)
            return Const(value=regex.fullmatch(str(operand.value)) is not None)
        return Like(operand=operand, pattern=pattern.value)

    def not_like(self, node: Node, pattern_node: Node) -> Expr:
        return _negate(self.like(node, pattern_node))

    def is_null(self, node: Node) -> Expr:
        operand = _as_operand(node)
        if not isinstance(operand, FieldRef | JsonPath | ArrayRef):
            raise IllegalFilter(f"'is null' needs a field or JSON value, got {describe(operand)}")
        return IsNull(operand=operand)

    def is_not_null(self, node: Node) -> Expr:
        return _negate(self.is_null(node))

    def exists(self, node: Node) -> Expr:
        return Exists(path=_as_json_path(_as_operand(node), "'exists'"))

    # ---------------------------------------------------------- values

    def arith(self, left_node: Node, op_token: Token, right_node: Node) -> Operand:
        left, right = _as_operand(left_node), _as_operand(right_node)
        op = _ARITH_OPS[str(op_token)]
        _check_numeric(left, op.value)
        _check_numeric(right, op.value)
        if isinstance(left, Literal) and isinstance(right, Literal):
            value = semantics.arith(op, left.value, right.value)
            if value is semantics.MISSING:
                spelled = f"{render(left)} {op.value} {render(right)}"
                raise IllegalFilter(f"division by zero in `{quote(spelled)}`")
            return Literal(value=value)
        return Arith(op=op, left=left, right=right)

    def unary_op(self, op_token: Token, node: Node) -> Operand:
        operand = _as_operand(node)
        kind = operand_kind(operand)
        if not (kind.is_numeric or kind is ValueKind.JSON):
            raise IllegalFilter(f"unary '{op_token}' cannot be applied to {describe(operand)}")
        if str(op_token) == "+":
            return operand
        if isinstance(operand, Literal) and isinstance(operand.value, int | float):
            return Literal(value=-operand.value)  # true negation: -0.0 stays -0.0
        return Arith(op=ArithOp.SUB, left=Literal(value=0), right=operand)

    def int_lit(self, token: Token) -> Literal:
        return Literal(value=_parse_int(str(token)))

    def float_lit(self, token: Token) -> Literal:
        return Literal(value=_parse_float(str(token)))

    def string_lit(self, token: Token) -> Literal:
        return Literal(value=unquote(str(token)))

    def true_lit(self, _token: Token) -> Literal:
        return Literal(value=True)

    def false_lit(self, _token: Token) -> Literal:
        return Literal(value=False)

    def list_lit(self, *nodes: Node) -> ListLiteral:
        values: list[Any] = []
        for node in nodes:
            item = _as_operand(node)
            if not isinstance(item, Literal | ListLiteral):
                raise IllegalFilter(f"list elements must be constants, got {describe(item)}")
            values.append(item.value if isinstance(item, Literal) else item.values)
        return ListLiteral(values=tuple(values))

    def placeholder(self, name: Token) -> Literal | ListLiteral:
        key = str(name)
        if key not in self._params:
            raise IllegalFilter(f"placeholder {{{key}}} has no value in the filter parameters")
        return _constant_node(_constant(self._params[key], key))

    def index(self, token: Token) -> str | int:
        return unquote(str(token)) if token.type == "STRING" else _parse_int(str(token))

    def path(self, name_token: Token, *keys: str | int) -> FieldRef | JsonPath | ArrayRef | ArrayElement:
        name, schema = str(name_token), self._schema
        if schema.has_field(name):
            field = schema.field(name)
            if field.dtype is DataType.JSON or field.is_dynamic:
                return JsonPath(field=name, keys=keys, dynamic=field.is_dynamic)
            if field.dtype is DataType.ARRAY:
                array = ArrayRef(name=name, element_type=field.element_type)
                if not keys:
                    return array
                if len(keys) > 1 or not isinstance(keys[0], int):
                    raise IllegalFilter(
                        f"{describe(array)} is indexed by one integer, as in {name}[0]; got {quote(render_constant(keys))}"
                    )
                return ArrayElement(array=array, index=keys[0])
            if field_kind(field.dtype) is None:
                raise IllegalFilter(f"field '{name}' of type {field.dtype.name} cannot be used in a filter")
            if keys:
                raise IllegalFilter(f"field '{name}' of type {field.dtype.name} cannot be indexed")
            return FieldRef(name=name, dtype=field.dtype)
        dynamic = schema.dynamic_field
        if dynamic is None or name == DYNAMIC_FIELD_NAME:
            raise IllegalFilter(f"field '{name}' does not exist in collection '{schema.name}'")
        return JsonPath(field=dynamic.name, keys=(name, *keys), dynamic=True)

    def call(self, name_token: Token, *arg_nodes: Node) -> Node:
        name = str(name_token).lower()
        args = [_as_operand(a) for a in arg_nodes]
        if name == "array_length":
            self._check_arity(name, args, 1)
            return ArrayLength(path=_as_container(args[0], name))
        if name in TEXT_FUNCTIONS:
            return bind_text_match(self._schema, name, args)
        mode = _CONTAINS_FUNCTIONS.get(name)
        if mode is None:
            raise IllegalFilter(f"unknown function '{name_token}'")
        self._check_arity(name, args, 2)
        path = _as_container(args[0], name)
        wanted = args[1]
        if isinstance(path, ArrayRef):
            return self._array_contains(name, mode, path, wanted)
        if mode is ContainsMode.ONE and isinstance(wanted, Literal):
            return JsonContains(mode=mode, path=path, values=(wanted.value,))
        if isinstance(wanted, ListLiteral):
            values = (wanted.values,) if mode is ContainsMode.ONE else wanted.values
            return JsonContains(mode=mode, path=path, values=values)
        expected = "a constant" if mode is ContainsMode.ONE else "a list"
        raise IllegalFilter(f"{name} needs {expected} as its second argument, got {describe(wanted)}")

    @staticmethod
    def _array_contains(name: str, mode: ContainsMode, array: ArrayRef, wanted: Operand) -> JsonContains:
        """``array_contains*`` on an ARRAY field: the wanted values must be of its element type."""
        if mode is ContainsMode.ONE:
            if not isinstance(wanted, Literal):
                raise IllegalFilter(
                    f"{name} on {describe(array)} needs one {array.element_type.name} value, got {describe(wanted)}"
                )
            _check_element(array, wanted.value)
            return JsonContains(mode=mode, path=array, values=(wanted.value,))
        if not isinstance(wanted, ListLiteral):
            raise IllegalFilter(f"{name} needs a list as its second argument, got {describe(wanted)}")
        for value in wanted.values:
            _check_element(array, value)
        return JsonContains(mode=mode, path=array, values=wanted.values)

    @staticmethod
    def _check_arity(name: str, args: Sequence[Operand], expected: int) -> None:
        if len(args) != expected:
            plural = "s" if expected > 1 else ""
            raise IllegalFilter(f"function {name} takes {expected} argument{plural}, got {len(args)}")
