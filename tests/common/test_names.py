"""Name rules with Milvus 2.6's texts and codes (``common/names.py``).

The expected texts are the ones Milvus answers (its proxy's ``util.go``; the collection, alias and
partition texts were also read back from a real Milvus 2.3.5, ``/tmp/milvus235``).
"""

from __future__ import annotations

import pytest

from common.errors import CODE_TABLE, ErrorCode, StrataError
from common.names import (
    alias_not_found,
    check_alias,
    check_collection_name,
    check_field_name,
    check_partition_name,
    collection_not_found,
    database_not_found,
)

FIRST = "the first character of a collection name must be an underscore or letter: invalid parameter"
ONLY = "collection name can only contain numbers, letters and underscores: invalid parameter"


def _refusal(check: object, name: str) -> tuple[str, int]:
    with pytest.raises(StrataError) as err:
        check(name)  # type: ignore[operator]
    return err.value.message, CODE_TABLE[err.value.code].milvus_code


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("1abc", f"Invalid collection name: 1abc. {FIRST}"),
        ("(mn)", f"Invalid collection name: (mn). {FIRST}"),
        ("中文", f"Invalid collection name: 中文. {FIRST}"),
        ("é", f"Invalid collection name: é. {FIRST}"),
        ("a-b", f"Invalid collection name: a-b. {ONLY}"),
        ("a b", f"Invalid collection name: a b. {ONLY}"),
        ("español", f"Invalid collection name: español. {ONLY}"),
        ("", "collection name should not be empty: invalid parameter"),
        ("  ", "collection name should not be empty: invalid parameter"),
        (
            "a" * 256,
            f"Invalid collection name: {'a' * 256}. the length of a collection name must be less than 255 "
            "characters: invalid parameter",
        ),
    ],
)
def test_bad_collection_names_get_milvus_texts_and_code_1100(name: str, message: str) -> None:
    assert _refusal(check_collection_name, name) == (message, 1100)


def test_good_collection_names_pass_and_surrounding_spaces_are_ignored_by_the_check() -> None:
    for name in ("a", "_", "A_b_9", "_" * 255, " padded ", "a" * 255):
        check_collection_name(name)


def test_alias_texts_say_alias() -> None:
    assert _refusal(check_alias, "1al") == (
        "Invalid collection alias: 1al. the first character of a collection alias must be an underscore or "
        "letter: invalid parameter",
        1100,
    )
    assert _refusal(check_alias, "")[0] == "collection alias should not be empty: invalid parameter"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Invalid partition name: . Partition name should not be empty."),
        (" ", "Invalid partition name: . Partition name should not be empty."),
        ("(mn)", "Invalid partition name: (mn). The first character of a partition name must be an underscore or letter."),
        ("中文", "Invalid partition name: 中文. The first character of a partition name must be an underscore or letter."),
        ("12 s", "Invalid partition name: 12 s. Partition name can only contain numbers, letters and underscores."),
        ("p%$#", "Invalid partition name: p%$#. Partition name can only contain numbers, letters and underscores."),
        (
            "p" * 256,
            f"Invalid partition name: {'p' * 256}. The length of a partition name must be less than 255 characters.",
        ),
    ],
)
def test_bad_partition_names_are_a_plain_error_65535(name: str, message: str) -> None:
    assert _refusal(check_partition_name, name) == (message, 65535)


def test_partition_names_may_start_with_a_digit_and_hold_a_dash_as_in_milvus_2_6() -> None:
    for name in ("_default", "1p", "9", "p-q", "A_b-9", "_" * 255):
        check_partition_name(name)


def test_a_read_checks_only_empty_and_length() -> None:
    check_partition_name("(mn)", strict=False)
    with pytest.raises(StrataError, match="should not be empty"):
        check_partition_name("", strict=False)
    with pytest.raises(StrataError, match="must be less than 255"):
        check_partition_name("p" * 256, strict=False)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "field name should not be empty: field name invalid[field=]"),
        (
            "1v",
            "Invalid field name: 1v. The first character of a field name must be an underscore or letter.: "
            "field name invalid[field=1v]",
        ),
        (
            "$meta",
            "Invalid field name: $meta. The first character of a field name must be an underscore or letter.: "
            "field name invalid[field=$meta]",
        ),
        (
            "a-b",
            "Invalid field name: a-b. Field name can only contain numbers, letters, and underscores.: "
            "field name invalid[field=a-b]",
        ),
    ],
)
def test_bad_field_names_get_code_1701(name: str, message: str) -> None:
    assert _refusal(check_field_name, name) == (message, 1701)


def test_not_found_errors_carry_the_database() -> None:
    err = collection_not_found("xyz")
    assert (err.message, err.code) == ("collection not found[database=default][collection=xyz]", ErrorCode.COLLECTION_NOT_FOUND)
    assert CODE_TABLE[err.code].milvus_code == 100 and CODE_TABLE[err.code].milvus_legacy == 4
    alias = alias_not_found("al")
    assert alias.message == "alias not found[database=default][alias=al]"
    assert CODE_TABLE[alias.code].milvus_code == 1600
    db = database_not_found("x")
    assert db.message == "database not found[database=x]" and CODE_TABLE[db.code].milvus_code == 800
