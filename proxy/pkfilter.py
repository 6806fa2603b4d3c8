"""Recognise filters that name primary keys directly (``id in [..]``, ``id == x``).

Deletes with such a filter need no read: the keys are in the expression. Any
other filter returns ``None`` and the proxy queries for the matching keys.
"""

from __future__ import annotations

from common.expr import Compare, CompareOp, Expr, FieldRef, InList, Literal
from common.schema import CollectionSchema


def primary_keys_of(expr: Expr, schema: CollectionSchema) -> list[int | str] | None:
    pk = schema.primary_field.name
    if isinstance(expr, InList) and isinstance(expr.operand, FieldRef) and expr.operand.name == pk:
        return [v for v in dict.fromkeys(expr.values)]
    if isinstance(expr, Compare) and expr.op == CompareOp.EQ:
        for a, b in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(a, FieldRef) and a.name == pk and isinstance(b, Literal):
                if isinstance(b.value, (int, str)) and not isinstance(b.value, bool):
                    return [b.value]
    return None
