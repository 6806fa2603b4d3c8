"""Resource groups: Strata has Milvus's default one only, holding every query node.

Milvus 2.6 keeps query nodes in named resource groups, declared with a
requested and a limit node count (``querycoordv2/meta/resource_manager.go``);
a standalone has ``__default_resource_group`` alone, requesting 0 nodes and
limited to 1,000,000 (its legacy capacity). Strata places replicas on every
live query node and has no other group, so the calls that would create, drop,
reconfigure or move between groups answer what Milvus answers for the cases a
one-group cluster can reach (the default group's texts and codes), and a clear
``NotSupported`` where a second group would be needed.

The name rules are Milvus's ``ValidateResourceGroupName`` (``internal/proxy/util.go``).
"""

from __future__ import annotations

from common.errors import (
    ErrorCode,
    InvalidArgument,
    NotSupported,
    ResourceGroupAlreadyExist,
    ResourceGroupNotFound,
    StrataError,
)

DEFAULT_RESOURCE_GROUP = "__default_resource_group"
DEFAULT_CAPACITY = 1_000_000  # Milvus's DefaultResourceGroupCapacity: the default group's limit and capacity
MAX_NAME_LENGTH = 255

_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_REST = _FIRST | frozenset("0123456789")


def check_resource_group_name(name: str) -> None:
    """Refuse ``name`` for a new resource group, as Milvus's proxy does (its texts and codes)."""
    if not name:
        raise StrataError("resource group name couldn't be empty", ErrorCode.REFUSED)  # a plain error in Milvus
    invalid = f"Invalid resource group name {name}."
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(
            f"{invalid} the length of a resource group name must be less than {MAX_NAME_LENGTH} characters: "
            "invalid parameter"
        )
    if name[0] not in _FIRST:
        raise InvalidArgument(
            f"{invalid} the first character of a resource group name must be an underscore or letter: "
            "invalid parameter"
        )
    if any(c not in _REST for c in name[1:]):
        raise InvalidArgument(
            f"{invalid} resource group name can only contain numbers, letters and underscores: invalid parameter"
        )


def resource_group_not_found(name: str) -> ResourceGroupNotFound:
    """Milvus's ``resource group not found[rg=<name>]`` (code 300)."""
    return ResourceGroupNotFound(f"resource group not found[rg={name}]")


def already_exists(name: str) -> ResourceGroupAlreadyExist:
    """Milvus's answer to creating an existing group with another config (code 301)."""
    return ResourceGroupAlreadyExist(f"resource group already exist, but create with different config[rg={name}]")


def invalid_parameter(expected: str, actual: str, message: str = "") -> InvalidArgument:
    """Milvus's ``merr.WrapErrParameterInvalid``: ``<message>: invalid parameter[expected=..][actual=..]``."""
    text = f"invalid parameter[expected={expected}][actual={actual}]"
    return InvalidArgument(f"{message}: {text}" if message else text)


def same_group(name: str) -> InvalidArgument:
    """Milvus's refusal to transfer nodes or replicas within one group (code 1100)."""
    return InvalidArgument(
        f"source resource group and target resource group should not be the same, resource group: {name}: "
        "invalid parameter"
    )


def one_group_only(what: str) -> NotSupported:
    """``what`` needs a resource group besides the default one, which Strata does not have."""
    return NotSupported(
        f"{what} is not supported: Strata has one resource group, {DEFAULT_RESOURCE_GROUP}, "
        "holding every query node"
    )
