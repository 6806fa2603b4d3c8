"""parse_filter: accepted forms, the AST they bind to, and every error."""

from __future__ import annotations

import numpy as np
import pytest

from common.errors import ErrorCode, IllegalFilter
from common.expr import (
    And,
    Arith,
    ArithOp,
    ArrayLength,
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
    Not,
    Or,
    parse_filter,
    referenced_fields,
    render,
)
from common.schema import CollectionSchema, DataType

AGE = FieldRef(name="age", dtype=DataType.INT32)
SCORE = FieldRef(name="score", dtype=DataType.DOUBLE)
NAME = FieldRef(name="name", dtype=DataType.VARCHAR)
ACTIVE = FieldRef(name="active", dtype=DataType.BOOL)


def lit(value: bool | float | str) -> Literal:
    return Literal(value=value)


def cmp(op: CompareOp, left: object, right: object) -> Compare:
    return Compare(op=op, left=left, right=right)  # type: ignore[arg-type]


def meta(*keys: str | int) -> JsonPath:
    return JsonPath(field="meta", keys=keys)


def dyn(*keys: str | int) -> JsonPath:
    return JsonPath(field="$meta", keys=keys, dynamic=True)


AGE_GT_1 = cmp(CompareOp.GT, AGE, lit(1))
AGE_LT_9 = cmp(CompareOp.LT, AGE, lit(9))
IS_ACTIVE = cmp(CompareOp.EQ, ACTIVE, lit(True))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("age > 1", AGE_GT_1),
        ("age == 1", cmp(CompareOp.EQ, AGE, lit(1))),
        ("age != 1", cmp(CompareOp.NE, AGE, lit(1))),
        ("age <= 1", cmp(CompareOp.LE, AGE, lit(1))),
        ("age >= 1", cmp(CompareOp.GE, AGE, lit(1))),
        ("1 < age", cmp(CompareOp.LT, lit(1), AGE)),
        ("score > 1.5", cmp(CompareOp.GT, SCORE, lit(1.5))),
        ("score > 1e3", cmp(CompareOp.GT, SCORE, lit(1000.0))),
        ("score > .5E-1", cmp(CompareOp.GT, SCORE, lit(0.05))),
        ("age > 0x1F", cmp(CompareOp.GT, AGE, lit(31))),
        ("age > 0b101", cmp(CompareOp.GT, AGE, lit(5))),
        ("age > 007", cmp(CompareOp.GT, AGE, lit(7))),
        ("age > -3", cmp(CompareOp.GT, AGE, lit(-3))),
        ("age > +3", cmp(CompareOp.GT, AGE, lit(3))),
        ("age > 2 * 3 + 1", cmp(CompareOp.GT, AGE, lit(7))),
        ("age > 7 / 2", cmp(CompareOp.GT, AGE, lit(3))),
        ("age > -7 % 3", cmp(CompareOp.GT, AGE, lit(-1))),
        ("age > 2 ** 3", cmp(CompareOp.GT, AGE, lit(8.0))),
        ("age > -2 ** 2", cmp(CompareOp.GT, AGE, lit(-4.0))),
        ("age > 9223372036854775807", cmp(CompareOp.GT, AGE, lit(2**63 - 1))),
        ("age > -9223372036854775808", cmp(CompareOp.GT, AGE, lit(-(2**63)))),
        ('name == "a\\"b"', cmp(CompareOp.EQ, NAME, lit('a"b'))),
        ("name == 'it\\'s'", cmp(CompareOp.EQ, NAME, lit("it's"))),
        ('name == "tab\\tnl\\n\\u00e9"', cmp(CompareOp.EQ, NAME, lit("tab\tnl\né"))),
        ("name == 'say \"hi\"'", cmp(CompareOp.EQ, NAME, lit('say "hi"'))),
        ("active", IS_ACTIVE),
        ("active == true", IS_ACTIVE),
        ("active == True", IS_ACTIVE),
        ("active == TRUE", IS_ACTIVE),
        ("active != false", cmp(CompareOp.NE, ACTIVE, lit(False))),
        ("not active", Not(operand=IS_ACTIVE)),
        ("!active", Not(operand=IS_ACTIVE)),
        ("NOT active", Not(operand=IS_ACTIVE)),
        ("true", Const(value=True)),
        ("False", Const(value=False)),
        ("1 < 2", Const(value=True)),
        ('"ab" like "a%"', Const(value=True)),
        ("3 in [1, 2]", Const(value=False)),
        ("age > 1 and true", AGE_GT_1),
        ("age > 1 or false", AGE_GT_1),
        ("age > 1 or true", Const(value=True)),
        ("1 < age < 9", And(operands=(cmp(CompareOp.LT, lit(1), AGE), AGE_LT_9))),
        (
            "9 >= age > 1",
            And(operands=(cmp(CompareOp.GE, lit(9), AGE), cmp(CompareOp.GT, AGE, lit(1)))),
        ),
        ("age > 1 and age < 9", And(operands=(AGE_GT_1, AGE_LT_9))),
        ("age > 1 && age < 9", And(operands=(AGE_GT_1, AGE_LT_9))),
        ("age > 1 AND age < 9", And(operands=(AGE_GT_1, AGE_LT_9))),
        ("age > 1 or age < 9", Or(operands=(AGE_GT_1, AGE_LT_9))),
        ("age > 1 || age < 9", Or(operands=(AGE_GT_1, AGE_LT_9))),
        ("age > 1 OR age < 9", Or(operands=(AGE_GT_1, AGE_LT_9))),
        (
            "age > 1 or age < 9 and active",
            Or(operands=(AGE_GT_1, And(operands=(AGE_LT_9, IS_ACTIVE)))),
        ),
        (
            "(age > 1 or age < 9) and active",
            And(operands=(Or(operands=(AGE_GT_1, AGE_LT_9)), IS_ACTIVE)),
        ),
        ("not age > 1 and active", And(operands=(Not(operand=AGE_GT_1), IS_ACTIVE))),
        ("not (age > 1 and active)", Not(operand=And(operands=(AGE_GT_1, IS_ACTIVE)))),
        ("age > 1 and (age < 9 and active)", And(operands=(AGE_GT_1, AGE_LT_9, IS_ACTIVE))),
        (
            "age * 2 + 1 > 10",
            cmp(
                CompareOp.GT,
                Arith(
                    op=ArithOp.ADD,
                    left=Arith(op=ArithOp.MUL, left=AGE, right=lit(2)),
                    right=lit(1),
                ),
                lit(10),
            ),
        ),
        (
            "age + 2 * score > 1",
            cmp(
                CompareOp.GT,
                Arith(op=ArithOp.ADD, left=AGE, right=Arith(op=ArithOp.MUL, left=lit(2), right=SCORE)),
                lit(1),
            ),
        ),
        ("-age > 1", cmp(CompareOp.GT, Arith(op=ArithOp.SUB, left=lit(0), right=AGE), lit(1))),
        ("age % 3 == 0", cmp(CompareOp.EQ, Arith(op=ArithOp.MOD, left=AGE, right=lit(3)), lit(0))),
        ("age > score", cmp(CompareOp.GT, AGE, SCORE)),
        ("age in [1, 2, 3]", InList(operand=AGE, values=(1, 2, 3))),
        ("age IN [1, 2.5,]", InList(operand=AGE, values=(1, 2.5))),
        ("age in []", InList(operand=AGE, values=())),
        ('name not in ["x"]', Not(operand=InList(operand=NAME, values=("x",)))),
        ('name NOT IN ["x"]', Not(operand=InList(operand=NAME, values=("x",)))),
        ('name like "ab%"', Like(operand=NAME, pattern="ab%")),
        ('name LIKE "%a_b%"', Like(operand=NAME, pattern="%a_b%")),
        ('name like "100\\%"', Like(operand=NAME, pattern="100\\%")),
        ('name not like "a%"', Not(operand=Like(operand=NAME, pattern="a%"))),
        ("age is null", IsNull(operand=AGE)),
        ("age IS NULL", IsNull(operand=AGE)),
        ("age is not null", Not(operand=IsNull(operand=AGE))),
        ("age IS NOT NULL", Not(operand=IsNull(operand=AGE))),
        ('meta["a"] is null', IsNull(operand=meta("a"))),
        ('meta["a"]["b"] == 1', cmp(CompareOp.EQ, meta("a", "b"), lit(1))),
        ("meta['arr'][0] == 'x'", cmp(CompareOp.EQ, meta("arr", 0), lit("x"))),
        ('meta["flag"]', cmp(CompareOp.EQ, meta("flag"), lit(True))),
        ('meta["a"] == [1, "b"]', cmp(CompareOp.EQ, meta("a"), ListLiteral(values=(1, "b")))),
        ('$meta["x"] > 1', cmp(CompareOp.GT, dyn("x"), lit(1))),
        ("x > 1", cmp(CompareOp.GT, dyn("x"), lit(1))),
        ('x["y"][2] > 1', cmp(CompareOp.GT, dyn("x", "y", 2), lit(1))),
        ('meta["a"] in [1, "b", true]', InList(operand=meta("a"), values=(1, "b", True))),
        ('meta["a"] like "x%"', Like(operand=meta("a"), pattern="x%")),
        (
            'json_contains(meta["tags"], "a")',
            JsonContains(mode=ContainsMode.ONE, path=meta("tags"), values=("a",)),
        ),
        (
            'JSON_CONTAINS(meta["tags"], [1, 2])',
            JsonContains(mode=ContainsMode.ONE, path=meta("tags"), values=((1, 2),)),
        ),
        (
            'json_contains_all(meta["tags"], ["a", "b"])',
            JsonContains(mode=ContainsMode.ALL, path=meta("tags"), values=("a", "b")),
        ),
        (
            "json_contains_any(tags, [1, 2])",
            JsonContains(mode=ContainsMode.ANY, path=dyn("tags"), values=(1, 2)),
        ),
        (
            'array_contains(meta["tags"], 1)',
            JsonContains(mode=ContainsMode.ONE, path=meta("tags"), values=(1,)),
        ),
        (
            'array_length(meta["tags"]) >= 2',
            cmp(CompareOp.GE, ArrayLength(path=meta("tags")), lit(2)),
        ),
        ('exists meta["a"]', Exists(path=meta("a"))),
        ('EXISTS(meta["a"])', Exists(path=meta("a"))),
        ("exists x", Exists(path=dyn("x"))),
        (
            'meta["a"] + 1 > 2',
            cmp(CompareOp.GT, Arith(op=ArithOp.ADD, left=meta("a"), right=lit(1)), lit(2)),
        ),
    ],
)
def test_accepted_forms(text: str, expected: Expr, schema: CollectionSchema) -> None:
    assert parse_filter(text, schema) == expected


def test_field_vs_field(schema: CollectionSchema) -> None:
    assert parse_filter("name > name", schema) == cmp(CompareOp.GT, NAME, NAME)
    assert parse_filter("active == active", schema) == cmp(CompareOp.EQ, ACTIVE, ACTIVE)


@pytest.mark.parametrize(
    ("text", "params", "expected"),
    [
        ("age > {min_age}", {"min_age": 3}, cmp(CompareOp.GT, AGE, lit(3))),
        ("age > {m}", {"m": np.int64(3)}, cmp(CompareOp.GT, AGE, lit(3))),
        ("age in {ids}", {"ids": [1, 2]}, InList(operand=AGE, values=(1, 2))),
        ("age in {ids}", {"ids": np.array([1, 2])}, InList(operand=AGE, values=(1, 2))),
        ("age in [{a}, 2]", {"a": 1}, InList(operand=AGE, values=(1, 2))),
        ("name like {p}", {"p": "a%"}, Like(operand=NAME, pattern="a%")),
        ("active == {b}", {"b": True}, IS_ACTIVE),
        (
            "{lo} < age < {hi}",
            {"lo": 1, "hi": 9},
            And(operands=(cmp(CompareOp.LT, lit(1), AGE), AGE_LT_9)),
        ),
        (
            'json_contains_any(meta["t"], {v})',
            {"v": ("a", 1)},
            JsonContains(mode=ContainsMode.ANY, path=meta("t"), values=("a", 1)),
        ),
    ],
)
def test_placeholders(text: str, params: dict[str, object], expected: Expr, schema: CollectionSchema) -> None:
    assert parse_filter(text, schema, params) == expected


def test_keyword_prefixed_names_are_names(schema: CollectionSchema) -> None:
    for name in (
        "index",
        "notes",
        "is_active",
        "org",
        "andy",
        "nullable",
        "true_",
        "likes",
        "exists_",
    ):
        assert parse_filter(f"{name} > 1", schema) == cmp(CompareOp.GT, dyn(name), lit(1))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("age >> 3", "cannot parse expression: `age >> 3`, unexpected token '>' at column 6"),
        ("age = 3", "cannot parse expression: `age = 3`, unexpected character '=' at column 5"),
        ("age > ", "cannot parse expression: `age > `, unexpected end of expression"),
        ("(age > 1", "cannot parse expression: `(age > 1`, unexpected end of expression"),
        ("age > 1 2", "unexpected token '2' at column 9"),
        ("age @ 1", "unexpected character '@' at column 5"),
        ('name == "abc', "unexpected character '\"' at column 9"),
        ("", "filter expression is empty"),
        ("   \n", "filter expression is empty"),
        ("vec > 1", "field 'vec' of type FLOAT_VECTOR cannot be used in a filter"),
        ("name == 3", "cannot compare VARCHAR field 'name' with number 3"),
        ('age == "3"', "cannot compare INT32 field 'age' with string \"3\""),
        ("age == true", "cannot compare INT32 field 'age' with boolean true"),
        ("active == 1", "cannot compare BOOL field 'active' with number 1"),
        ("name > age", "cannot compare VARCHAR field 'name' with INT32 field 'age'"),
        ("age == [1]", "cannot compare INT32 field 'age' with list [1]"),
        ('1 == "a"', 'cannot compare number 1 with string "a"'),
        ("active < true", "operator '<' cannot be applied to BOOL field 'active'"),
        ('meta["a"] > true', "operator '>' cannot be applied to boolean true"),
        ('meta["a"] > [1]', "operator '>' cannot be applied to list [1]"),
        ('name in ["a", 1]', "cannot compare VARCHAR field 'name' with number 1"),
        ("age in [1, [2]]", "cannot compare INT32 field 'age' with list [2]"),
        ("age in 3", "'in' needs a list on its right side, got number 3"),
        ("age in [score]", "list elements must be constants, got DOUBLE field 'score'"),
        ('age like "1%"', "'like' cannot be applied to INT32 field 'age'"),
        ("name like 3", "the pattern of 'like' must be a string, got number 3"),
        ("score is null + 1", "unexpected token '+' at column 15"),
        ("age + 1 is null", "'is null' needs a field or JSON value, got expression `(age + 1)`"),
        ("exists age", "'exists' needs a JSON value such as meta[\"key\"], got INT32 field 'age'"),
        ("name + 1 > 2", "arithmetic operator '+' cannot be applied to VARCHAR field 'name'"),
        ("active * 2 > 1", "arithmetic operator '*' cannot be applied to BOOL field 'active'"),
        ("-name > 1", "unary '-' cannot be applied to VARCHAR field 'name'"),
        ("age > 1 / 0", "division by zero in `1 / 0`"),
        ("age > 5 % 0", "division by zero in `5 % 0`"),
        ("1 < age > 3", "chained comparison with '< >' is not a range"),
        ("1 < age < 3 < 5", "chained comparison with '< < <' is not a range"),
        ("age == 1 == 1", "chained comparison with '== ==' is not a range"),
        ("age[0] > 1", "field 'age' of type INT32 cannot be indexed"),
        ("(age > 1) + 1 > 2", "a boolean expression cannot be used as a value: `age > 1`"),
        ("age", "INT32 field 'age' is not a boolean expression"),
        ("3", "number 3 is not a boolean expression"),
        ("age + 1", "expression `(age + 1)` is not a boolean expression"),
        ("age > {nope}", "placeholder {nope} has no value in the filter parameters"),
        ("foo(meta)", "unknown function 'foo'"),
        ("json_contains(meta)", "function json_contains takes 2 arguments, got 1"),
        ("array_length(meta, 1) > 1", "function array_length takes 1 argument, got 2"),
        ("json_contains(age, 1)", 'json_contains needs an ARRAY field or a JSON value such as meta["key"]'),
        (
            'json_contains_all(meta["a"], 1)',
            "json_contains_all needs a list as its second argument, got number 1",
        ),
        (
            'json_contains(meta["a"], meta["b"])',
            "json_contains needs a constant as its second argument",
        ),
        ("age > 99999999999999999999", "integer 99999999999999999999 is out of the int64 range"),
    ],
)
def test_errors(text: str, message: str, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter(text, schema)
    assert message in info.value.message
    assert info.value.code is ErrorCode.ILLEGAL_FILTER


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("agee > 1", "field 'agee' does not exist in collection 'c'"),
        ('$meta["x"] > 1', "field '$meta' does not exist in collection 'c'"),
        ('json_contains(x["a"], 1)', "field 'x' does not exist in collection 'c'"),
        ("exists x", "field 'x' does not exist in collection 'c'"),
    ],
)
def test_unknown_names_without_dynamic_field(text: str, message: str, static_schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter(text, static_schema)
    assert info.value.message == message


def test_keywords_are_reserved(schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter, match="unexpected token 'and' at line 2, column 5"):
        parse_filter("age > 1\nand and", schema)
    assert parse_filter('$meta["and"] == 1', schema) == cmp(CompareOp.EQ, dyn("and"), lit(1))


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"v": None}, "placeholder {v} has a value of unsupported type NoneType"),
        ({"v": {"a": 1}}, "placeholder {v} has a value of unsupported type dict"),
        ({"v": 2**64}, "placeholder {v}: integer 18446744073709551616 is out of the int64 range"),
    ],
)
def test_bad_placeholder_values(params: dict[str, object], message: str, schema: CollectionSchema) -> None:
    with pytest.raises(IllegalFilter) as info:
        parse_filter("age > {v}", schema, params)
    assert info.value.message == message


@pytest.mark.parametrize(
    "text",
    [
        'age > 1 and (name like "a%" or not active)',
        "1 <= age < 10 and score * 2 - 1 >= ratio",
        'meta["a"]["b"] in [1, "x", [2, 3]] or exists $meta["k"]',
        'json_contains_all(meta["t"], ["a", "b"]) and array_length(tags) == 2',
        "age is not null and meta is null",
        "(age + 1) ** 2 % 3 != 0.5",
        "score > -0.0 and score < -2.5 * 0",
        'name not like "a\\\\%b" and name == "quo\\"te\\n"',
    ],
)
def test_render_round_trips(text: str, schema: CollectionSchema) -> None:
    expr = parse_filter(text, schema)
    assert parse_filter(render(expr), schema) == expr


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("age > 1", {"age"}),
        ("age > score and name like 'a%'", {"age", "score", "name"}),
        ('meta["a"] == 1 or x > 2', {"meta", "$meta"}),
        ("json_contains(tags, 1)", {"$meta"}),
        ("true", set()),
    ],
)
def test_referenced_fields(text: str, fields: set[str], schema: CollectionSchema) -> None:
    assert referenced_fields(parse_filter(text, schema)) == fields


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ("x == 1", "x == true"),
        ("x == 1", "x == 1.0"),
        ("age / 2 > 1", "age / 2.0 > 1"),
        ("x in [1, 0]", "x in [true, false]"),
        ("json_contains(tags, 1)", "json_contains(tags, true)"),
        ("meta == [1]", "meta == [true]"),
    ],
)
def test_equal_nodes_mean_the_same_filter(left: str, right: str, schema: CollectionSchema) -> None:
    # Python has True == 1 == 1.0; bound filters must not.
    assert parse_filter(left, schema) != parse_filter(right, schema)
    assert parse_filter(left, schema) == parse_filter(left, schema)
    assert hash(parse_filter(left, schema)) == hash(parse_filter(left, schema))
