"""Rules for the names users give collections and aliases (as Milvus: 255 characters at most,
letters, digits and underscores, starting with a letter or an underscore)."""

from __future__ import annotations

import re

from services.errors import InvalidArgument

MAX_NAME_LENGTH = 255
_FIRST = re.compile(r"[A-Za-z_]")
_REST = re.compile(r"[A-Za-z0-9_]*")


def check_name(name: str, what: str = "collection") -> None:
    if not name:
        raise InvalidArgument(f"{what} name should not be empty")
    invalid = f"Invalid {what} name: {name}."
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"{invalid} the length of a {what} name must be less than {MAX_NAME_LENGTH} characters")
    if not _FIRST.fullmatch(name[0]):
        raise InvalidArgument(f"{invalid} the first character of a {what} name must be an underscore or letter")
    if not _REST.fullmatch(name[1:]):
        raise InvalidArgument(f"{invalid} the {what} name can only contain numbers, letters and underscores")
