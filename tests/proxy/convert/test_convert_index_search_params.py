"""The IVF and quantizer search parameters at the proxy edge: checked, typed, and checked again
against the searched field's index once it is known."""

from __future__ import annotations

from typing import Any

import pytest

from common.errors import InvalidArgument
from proxy.convert.search import parse_search_request
from proxy.convert.search_checks import check_index_search_params
from tests.proxy.convert.test_convert_search import domain, make_schema, request


def test_the_parameters_are_made_numbers() -> None:
    params = {"nprobe": "16", "reorder_k": 40.0, "rbq_query_bits": 6, "refine_k": "2.5", "ef": 64}
    spec = parse_search_request(request(param={"params": params}), domain(make_schema()))
    assert spec.params == {"nprobe": 16, "reorder_k": 40, "rbq_query_bits": 6, "refine_k": 2.5, "ef": 64}
    assert isinstance(spec.params["nprobe"], int) and isinstance(spec.params["refine_k"], float)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"nprobe": 0}, r"param 'nprobe' \(0\) should be an integer in range \[1, 65536\]"),
        ({"nprobe": 65537}, r"param 'nprobe' \(65537\) should be an integer in range \[1, 65536\]"),
        ({"nprobe": "all"}, r"param 'nprobe' \(all\) should be an integer"),
        ({"nprobe": 2.5}, r"param 'nprobe' \(2.5\) should be an integer"),
        ({"nprobe": True}, r"param 'nprobe' \(True\) should be an integer"),
        ({"reorder_k": 0}, r"param 'reorder_k' \(0\) should be an integer in range \[1, 2147483647\]"),
        ({"rbq_query_bits": 9}, r"param 'rbq_query_bits' \(9\) should be an integer in range \[0, 8\]"),
        ({"refine_k": 0.9}, r"param 'refine_k' \(0.9\) should be a number in range \[1, float_max\)"),
        ({"refine_k": "x"}, r"param 'refine_k' \(x\) should be a number"),
        ({"refine_k": "inf"}, r"param 'refine_k' \(inf\) should be a number"),
    ],
)
def test_bad_values_are_refused_naming_the_parameter(params: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        parse_search_request(request(param={"params": params}), domain(make_schema()))


def test_scann_needs_reorder_k_of_at_least_k() -> None:
    with pytest.raises(InvalidArgument, match=r"reorder_k\(5\) should be larger than k\(10\)"):
        check_index_search_params("scann", {"reorder_k": 5}, 10)
    check_index_search_params("SCANN", {"reorder_k": 10}, 10)
    check_index_search_params("SCANN", {}, 10)  # defaults to k
    check_index_search_params("IVF_FLAT", {"reorder_k": 5}, 10)  # ignored by other kinds, as Milvus
