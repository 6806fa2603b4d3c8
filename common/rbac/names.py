"""Milvus's rules for user, role and privilege group names, and password lengths."""

from __future__ import annotations

import re

from common.errors import InvalidArgument

MAX_NAME_LENGTH = 32
# proxy.minPasswordLength / proxy.maxPasswordLength.
MIN_PASSWORD_LENGTH = 6
MAX_PASSWORD_LENGTH = 256
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")


def _check(kind: str, name: str, pattern: re.Pattern[str], first: str) -> None:
    if not name:
        raise InvalidArgument(f"the {kind} should not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"invalid {kind} {name}. the length of {kind} must be not more than {MAX_NAME_LENGTH}")
    if not pattern.fullmatch(name):
        raise InvalidArgument(
            f"invalid {kind} {name}. the first character of {kind} must be {first}, "
            f"and the others must be letters, digits or underscores"
        )


def check_user_name(name: str) -> None:
    _check("username", name, _USER, "a letter")


def check_role_name(name: str) -> None:
    _check("role name", name, _NAME, "an underscore or a letter")


def check_group_name(name: str) -> None:
    _check("privilege group name", name, _NAME, "an underscore or a letter")


def check_password(password: str) -> None:
    """Milvus's length rule; the message never contains the password."""
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        raise InvalidArgument(
            f"invalid password length, the length of password must be between {MIN_PASSWORD_LENGTH} "
            f"and {MAX_PASSWORD_LENGTH} characters"
        )
