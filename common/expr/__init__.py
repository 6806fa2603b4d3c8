"""The Milvus boolean filter language: parse, bind, evaluate.

``parse_filter`` turns filter text into a typed AST bound to a collection
schema; ``evaluate`` runs it over an Arrow table; ``referenced_fields`` says
which columns it reads. See README.md in this package.
"""

from common.expr.ast import (
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
    Not,
    Operand,
    Or,
    referenced_fields,
    render,
)
from common.expr.evaluator import evaluate
from common.expr.parser import parse_filter

__all__ = [
    "And",
    "Arith",
    "ArithOp",
    "ArrayElement",
    "ArrayLength",
    "ArrayRef",
    "Compare",
    "CompareOp",
    "Const",
    "ContainsMode",
    "Exists",
    "Expr",
    "FieldRef",
    "InList",
    "IsNull",
    "JsonContains",
    "JsonPath",
    "Like",
    "ListLiteral",
    "Literal",
    "Not",
    "Operand",
    "Or",
    "evaluate",
    "parse_filter",
    "referenced_fields",
    "render",
]
