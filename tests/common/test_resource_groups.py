"""Resource group names and errors as Milvus's proxy and query coordinator word them (common/resource_groups.py)."""

from __future__ import annotations

import pytest

from common.errors import CODE_TABLE, StrataError
from common.resource_groups import check_resource_group_name, invalid_parameter, same_group


def _refusal(name: str) -> tuple[str, int]:
    with pytest.raises(StrataError) as err:
        check_resource_group_name(name)
    return err.value.message, CODE_TABLE[err.value.code].milvus_code


@pytest.mark.parametrize("name", ["rg", "_rg", "Rg_1", "a" * 255, "__default_resource_group"])
def test_valid_names_pass(name: str) -> None:
    check_resource_group_name(name)


def test_invalid_names_are_refused_with_milvus_texts_and_codes() -> None:
    assert _refusal("") == ("resource group name couldn't be empty", 65535)
    assert _refusal("1rg") == (
        "Invalid resource group name 1rg. the first character of a resource group name must be an underscore or "
        "letter: invalid parameter",
        1100,
    )
    assert _refusal("rg-1") == (
        "Invalid resource group name rg-1. resource group name can only contain numbers, letters and underscores: "
        "invalid parameter",
        1100,
    )
    long = "a" * 256
    assert _refusal(long) == (
        f"Invalid resource group name {long}. the length of a resource group name must be less than 255 "
        "characters: invalid parameter",
        1100,
    )


def test_parameter_errors_have_milvus_layout() -> None:
    assert invalid_parameter("x", "y").message == "invalid parameter[expected=x][actual=y]"
    assert invalid_parameter("x", "y", "why").message == "why: invalid parameter[expected=x][actual=y]"
    assert same_group("g").message == (
        "source resource group and target resource group should not be the same, resource group: g: invalid parameter"
    )
