"""The names users give collections, aliases, partitions and fields, and the errors that name them.

The checks are Milvus 2.6's (``internal/proxy/util.go``: ``validateCollectionNameOrAlias``,
``validatePartitionTag``, ``validateFieldName``), in its order and with its texts and codes,
which pymilvus and the SDKs show verbatim:

- collection names and aliases: at most 255 bytes, the first an ASCII letter or ``_``, the rest
  ASCII letters, digits or ``_``; code 1100, ``... : invalid parameter``;
- partition names: the same length; strictly checked, the first may also be a digit and the rest a
  ``-``; a plain error in Milvus (code 65535) in sentence case;
- field names: as collection names; code 1701, ``...: field name invalid[field=<name>]``.

- database names: the same rules (not stripped); code 802,
  ``<reason>: invalid database name[database=<name>]`` (``ValidateDatabaseName``).

Milvus checks the name with surrounding white space removed (the lookup that follows uses the
name as given) and counts bytes, so ``"é"`` fails on its first byte. Not-found errors carry the
database the name was looked up in, ``[database=<db>]`` (``DEFAULT_DATABASE`` unless given).
"""

from __future__ import annotations

from common.errors import (
    AliasNotFound,
    CollectionNotFound,
    DatabaseInvalidName,
    DatabaseNotFound,
    FieldNameInvalid,
    InvalidArgument,
    InvalidPartitionName,
)

MAX_NAME_LENGTH = 255
DEFAULT_DATABASE = "default"
DEFAULT_DATABASE_ID = 1  # Milvus' util.DefaultDBID

_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_DIGITS = frozenset(b"0123456789")
_FIRST = _LETTERS | {ord("_")}
_WORD = _FIRST | _DIGITS
_PARTITION_WORD = _WORD | {ord("-")}


def _first_ok(raw: bytes, allowed: frozenset[int]) -> bool:
    return raw[0] in allowed


def _rest_ok(raw: bytes, allowed: frozenset[int]) -> bool:
    return all(c in allowed for c in raw[1:])


def _check_collection_or_alias(name: str, kind: str) -> None:
    name = name.strip()
    if not name:
        raise InvalidArgument(f"collection {kind} should not be empty: invalid parameter")
    invalid = f"Invalid collection {kind}: {name}."
    raw = name.encode()
    if len(raw) > MAX_NAME_LENGTH:
        raise InvalidArgument(
            f"{invalid} the length of a collection {kind} must be less than {MAX_NAME_LENGTH} characters: "
            "invalid parameter"
        )
    if not _first_ok(raw, _FIRST):
        raise InvalidArgument(
            f"{invalid} the first character of a collection {kind} must be an underscore or letter: invalid parameter"
        )
    if not _rest_ok(raw, _WORD):
        raise InvalidArgument(
            f"{invalid} collection {kind} can only contain numbers, letters and underscores: invalid parameter"
        )


def check_collection_name(name: str) -> None:
    """Refuse ``name`` as a collection name (``InvalidArgument``, Milvus code 1100)."""
    _check_collection_or_alias(name, "name")


def check_alias(alias: str) -> None:
    """Refuse ``alias`` as an alias (``InvalidArgument``, Milvus code 1100)."""
    _check_collection_or_alias(alias, "alias")


def check_partition_name(name: str, *, strict: bool = True) -> None:
    """Refuse ``name`` as a partition name (``InvalidPartitionName``, Milvus code 65535).

    Not strict (reads naming partitions): only an empty or an over-long name is refused.
    """
    name = name.strip()
    invalid = f"Invalid partition name: {name}. "
    if not name:
        raise InvalidPartitionName(f"{invalid}Partition name should not be empty.")
    raw = name.encode()
    if len(raw) > MAX_NAME_LENGTH:
        raise InvalidPartitionName(
            f"{invalid}The length of a partition name must be less than {MAX_NAME_LENGTH} characters."
        )
    if not strict:
        return
    if not _first_ok(raw, _WORD):
        raise InvalidPartitionName(f"{invalid}The first character of a partition name must be an underscore or letter.")
    if not _rest_ok(raw, _PARTITION_WORD):
        raise InvalidPartitionName(f"{invalid}Partition name can only contain numbers, letters and underscores.")


def check_field_name(name: str) -> None:
    """Refuse ``name`` as a field name (``FieldNameInvalid``, Milvus code 1701)."""
    name = name.strip()
    suffix = f": field name invalid[field={name}]"
    if not name:
        raise FieldNameInvalid(f"field name should not be empty{suffix}")
    invalid = f"Invalid field name: {name}. "
    raw = name.encode()
    if len(raw) > MAX_NAME_LENGTH:
        raise FieldNameInvalid(
            f"{invalid}The length of a field name must be less than {MAX_NAME_LENGTH} characters.{suffix}"
        )
    if not _first_ok(raw, _FIRST):
        raise FieldNameInvalid(f"{invalid}The first character of a field name must be an underscore or letter.{suffix}")
    if not _rest_ok(raw, _WORD):
        raise FieldNameInvalid(f"{invalid}Field name can only contain numbers, letters, and underscores.{suffix}")


def check_database_name(name: str) -> None:
    """Refuse ``name`` as a database name (``DatabaseInvalidName``, Milvus code 802)."""

    def invalid(reason: str) -> DatabaseInvalidName:
        return DatabaseInvalidName(f"{reason}: invalid database name[database={name}]")

    if not name:
        raise invalid("database name couldn't be empty")
    raw = name.encode()
    if len(raw) > MAX_NAME_LENGTH:
        raise invalid(f"the length of a database name must be less than {MAX_NAME_LENGTH} characters")
    if not _first_ok(raw, _FIRST):
        raise invalid("the first character of a database name must be an underscore or letter")
    if not _rest_ok(raw, _WORD):
        raise invalid("database name can only contain numbers, letters and underscores")


def collection_not_found(name: str | int, db: str = DEFAULT_DATABASE) -> CollectionNotFound:
    """Milvus' ``collection not found[database=<db>][collection=<name>]`` (code 100)."""
    return CollectionNotFound(f"collection not found[database={db or DEFAULT_DATABASE}][collection={name}]")


def cannot_find_collection(name: str, db: str = DEFAULT_DATABASE) -> CollectionNotFound:
    """DescribeCollection's wording for a missing collection (code 100), which Milvus keeps for the
    SDKs: ``can't find collection[database=<db>][collection=<name>]``."""
    return CollectionNotFound(f"can't find collection[database={db or DEFAULT_DATABASE}][collection={name}]")


def alias_not_found(alias: str, db: str = DEFAULT_DATABASE) -> AliasNotFound:
    """Milvus' ``alias not found[database=<db>][alias=<alias>]`` (code 1600)."""
    return AliasNotFound(f"alias not found[database={db or DEFAULT_DATABASE}][alias={alias}]")


def database_not_found(name: str) -> DatabaseNotFound:
    """Milvus' ``database not found[database=<name>]`` (code 800)."""
    return DatabaseNotFound(f"database not found[database={name}]")
