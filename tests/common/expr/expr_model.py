"""A test-side model of filters: trees, their rendering, a reference evaluator.

The property tests draw ``Node`` trees, render them to filter text for
``parse_filter`` and evaluate them here, row by row, with plain Python
written independently of ``common.expr``: three-valued logic for nulls,
type-aware comparisons, C-style integer division, SQL ``like``, and ARRAY
fields as Python lists (``a[i]`` past the end makes its predicate false).
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

ABSENT = object()  # the reference's "no value"


@dataclass(frozen=True)
class Node:
    """A test-side expression node: ``kind`` plus its parts."""

    kind: str
    parts: tuple[Any, ...]


def node(kind: str, *parts: Any) -> Node:
    return Node(kind, parts)


def subtrees(tree: Node) -> list[Node]:
    """``tree`` and every predicate below it, so no leaf hides behind `and`/`or`."""
    found = [tree]
    if tree.kind in BOOL_PREC:
        for part in tree.parts:
            if isinstance(part, Node):
                found.extend(subtrees(part))
    return found


# --------------------------------------------------------------- rendering

SPELLINGS = {"and": ["and", "AND", "&&"], "or": ["or", "OR", "||"], "not": ["not ", "NOT ", "!"]}
ARITH_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2, "**": 3}
BOOL_PREC = {"or": 1, "and": 2, "not": 3}


def render_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def render_operand(n: Node) -> str:
    match n.kind:
        case "lit":
            return render_value(n.parts[0])
        case "field":
            return n.parts[0]
        case "elem":
            return f"{n.parts[0]}[{n.parts[1]}]"
        case "json":
            field, keys = n.parts
            if field == "$meta" and len(keys) == 1:
                return keys[0]  # a bare dynamic key
            return field + "".join(f"[{render_value(k)}]" for k in keys)
        case "alen":
            return f"array_length({render_operand(n.parts[0])})"
        case _:
            op, left, right = n.parts
            prec = ARITH_PREC[op]
            lt, rt = render_operand(left), render_operand(right)
            # `**` is right-associative and binds tighter than unary minus.
            loose_left = left.kind == "arith" and ARITH_PREC[left.parts[0]] < prec + (op == "**")
            negative_base = op == "**" and left.kind == "lit" and left.parts[0] < 0
            if loose_left or negative_base:
                lt = f"({lt})"
            if right.kind == "arith" and ARITH_PREC[right.parts[0]] <= prec:
                rt = f"({rt})"
            return f"{lt} {op} {rt}"


def render_pred(n: Node, draw: Callable[[st.SearchStrategy[Any]], Any]) -> str:
    match n.kind:
        case "cmp":
            op, left, right = n.parts
            return f"{render_operand(left)} {op} {render_operand(right)}"
        case "range":
            low, op1, operand, op2, high = n.parts
            return f"{render_operand(low)} {op1} {render_operand(operand)} {op2} {render_operand(high)}"
        case "in":
            operand, values, negated = n.parts
            return f"{render_operand(operand)} {'not in' if negated else 'in'} {render_value(values)}"
        case "like":
            operand, pattern, negated = n.parts
            return f"{render_operand(operand)} {'not like' if negated else 'like'} {render_value(pattern)}"
        case "isnull":
            operand, negated = n.parts
            return f"{render_operand(operand)} is {'not ' if negated else ''}null"
        case "contains":
            fn, path, values = n.parts
            arg = values[0] if fn.endswith("_contains") and values else values
            return f"{fn}({render_operand(path)}, {render_value(arg)})"
        case "exists":
            return f"exists {render_operand(n.parts[0])}"
        case "field" | "elem":
            return render_operand(n)
        case "not":
            inner = n.parts[0]
            text = render_pred(inner, draw)
            if inner.kind in BOOL_PREC or draw(st.booleans()):
                text = f"({text})"
            return draw(st.sampled_from(SPELLINGS["not"])) + text
        case _:
            op, left, right = n.kind, *n.parts
            texts = []
            for child in (left, right):
                text = render_pred(child, draw)
                if BOOL_PREC.get(child.kind, 9) < BOOL_PREC[op] or draw(st.booleans()):
                    text = f"({text})"
                texts.append(text)
            return f" {draw(st.sampled_from(SPELLINGS[op]))} ".join(texts)


# --------------------------------------------------------------- reference


def is_num(v: Any) -> bool:
    return type(v) in (int, float)


def deep_eq(a: Any, b: Any) -> bool:
    if is_num(a) and is_num(b):
        return a == b
    if type(a) is not type(b) and not (isinstance(a, list | tuple) and isinstance(b, list | tuple)):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(deep_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(deep_eq(a[k], b[k]) for k in a)
    return a == b


def ref_cmp(op: str, a: Any, b: Any) -> bool:
    if op == "!=":
        return not ref_cmp("==", a, b)
    if a is ABSENT or b is ABSENT or a is None or b is None:
        return False
    if op == "==":
        return deep_eq(a, b)
    if (is_num(a) and is_num(b)) or (type(a) is str and type(b) is str):
        return {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}[op](a, b)
    return False


def ref_arith(op: str, a: Any, b: Any) -> Any:
    if not (is_num(a) and is_num(b)) or (op in "/%" and b == 0):
        return ABSENT
    if op == "**":
        return float(a) ** float(b)
    if type(a) is int and type(b) is int:
        if op == "/":
            return int(a / b)
        if op == "%":
            return a - b * int(a / b)
    elif op == "/":
        return a / b
    elif op == "%":
        return math.fmod(a, b)
    return {"+": operator.add, "-": operator.sub, "*": operator.mul}[op](a, b)


def like_match(s: str, p: str) -> bool:
    """SQL LIKE by recursion over (string, pattern) positions."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(p):
        if p[i] == "\\":
            if i + 1 < len(p):
                tokens.append(("lit", p[i + 1]))
            i += 2
            continue
        tokens.append(("any" if p[i] == "%" else "one" if p[i] == "_" else "lit", p[i]))
        i += 1
    memo: dict[tuple[int, int], bool] = {}

    def go(si: int, ti: int) -> bool:
        if (si, ti) not in memo:
            if ti == len(tokens):
                memo[si, ti] = si == len(s)
            else:
                kind, ch = tokens[ti]
                if kind == "any":
                    memo[si, ti] = go(si, ti + 1) or (si < len(s) and go(si + 1, ti))
                else:
                    ok = si < len(s) and (kind == "one" or s[si] == ch)
                    memo[si, ti] = ok and go(si + 1, ti + 1)
        return memo[si, ti]

    return go(0, 0)


class Reference:
    """Evaluates test-side trees on one row with three-valued logic."""

    def __init__(self, row: dict[str, Any]) -> None:
        self.row = row
        self.docs = {
            "meta": ABSENT if row["meta"] is None else json.loads(row["meta"]),
            "$meta": {} if row["$meta"] is None else json.loads(row["$meta"]),
        }

    def value(self, n: Node) -> Any:
        match n.kind:
            case "lit":
                return n.parts[0]
            case "field":
                return self.row[n.parts[0]]
            case "elem":
                array, index = n.parts
                cells = self.row[array]
                return cells[index] if cells is not None and index < len(cells) else ABSENT
            case "json":
                doc = self.docs[n.parts[0]]
                for key in n.parts[1]:
                    in_object = isinstance(key, str) and isinstance(doc, dict) and key in doc
                    in_array = isinstance(key, int) and isinstance(doc, list) and key < len(doc)
                    if not (in_object or in_array):
                        return ABSENT
                    doc = doc[key]
                return doc
            case "alen":
                v = self.value(n.parts[0])
                return len(v) if isinstance(v, list) else ABSENT
            case _:
                op, left, right = n.parts
                return ref_arith(op, self.value(left), self.value(right))

    def nullable_columns_null(self, n: Node) -> bool:
        if n.kind in ("field", "elem"):
            return self.row[n.parts[0]] is None
        if n.kind == "json":
            return n.parts[0] == "meta" and self.row["meta"] is None
        return any(self.nullable_columns_null(p) for p in n.parts if isinstance(p, Node))

    def reads_absent_element(self, n: Node) -> bool:
        """Whether ``n`` reads some ``a[i]`` past the end of a (non-null) array."""
        if n.kind == "elem":
            return self.value(n) is ABSENT
        return any(self.reads_absent_element(p) for p in n.parts if isinstance(p, Node))

    def leaf(self, n: Node) -> bool:
        match n.kind:
            case "cmp":
                op, left, right = n.parts
                return ref_cmp(op, self.value(left), self.value(right))
            case "in":
                v = self.value(n.parts[0])
                found = v is not ABSENT and v is not None and any(deep_eq(v, x) for x in n.parts[1])
                return found != n.parts[2]
            case "like":
                v = self.value(n.parts[0])
                return (isinstance(v, str) and like_match(v, n.parts[1])) != n.parts[2]
            case "contains":
                fn, path, values = n.parts
                v = self.value(path)
                if not isinstance(v, list):
                    return False
                has = [any(deep_eq(e, w) for e in v) for w in values]
                fn = fn.replace("array_", "json_", 1)
                if fn == "json_contains":
                    return has[0] if values else any(deep_eq(e, []) for e in v)
                return all(has) if fn == "json_contains_all" else any(has)
            case "exists":
                return self.value(n.parts[0]) is not ABSENT
            case _:  # a bare boolean field
                return self.value(n) is True

    @staticmethod
    def eval_and(a: bool | None, b: bool | None) -> bool | None:
        return False if False in (a, b) else None if None in (a, b) else True

    def eval(self, n: Node) -> bool | None:
        match n.kind:
            case "isnull":
                v = self.value(n.parts[0])
                return (v is None or v is ABSENT) != n.parts[1]
            case "range":  # a Kleene `and` of its two comparisons
                low, op1, operand, op2, high = n.parts
                first = self.eval(node("cmp", op1, low, operand))
                second = self.eval(node("cmp", op2, operand, high))
                return self.eval_and(first, second)
            case "not":
                inner = self.eval(n.parts[0])
                return None if inner is None else not inner
            case "and":
                return self.eval_and(self.eval(n.parts[0]), self.eval(n.parts[1]))
            case "or":
                a, b = self.eval(n.parts[0]), self.eval(n.parts[1])
                return True if True in (a, b) else None if None in (a, b) else False
            case "in" | "like" if n.parts[-1]:
                # `not in` / `not like` negate the unknown-aware positive form
                positive = Node(n.kind, (*n.parts[:-1], False))
                inner = self.eval(positive)
                return None if inner is None else not inner
            case _:
                if self.nullable_columns_null(n):
                    return None
                if self.reads_absent_element(n):
                    return False
                return self.leaf(n)
