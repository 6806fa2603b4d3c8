"""The database a proxy request works in, as Milvus' proxy finds it.

pymilvus names it in the request's ``db_name`` (the calls that have one) and in the ``dbname``
gRPC metadata of every call (``client/call_context.py``); Milvus' database interceptor takes
the request's field first, then the metadata, then "default". ``milvus_rpc`` sets it for the
duration of each RPC; name lookups (``MetaCache.get``) and name-based coordinator requests read
it with ``current_database()``.
"""

from __future__ import annotations

import contextvars
from typing import Any

import grpc

from common.names import DEFAULT_DATABASE

DBNAME_METADATA = "dbname"

_current: contextvars.ContextVar[str] = contextvars.ContextVar("strata_database", default=DEFAULT_DATABASE)


def request_database(request: Any, context: grpc.aio.ServicerContext | None) -> str:
    """The database ``request`` names: its ``db_name`` field, else the ``dbname`` metadata, else "default"."""
    descriptor = getattr(request, "DESCRIPTOR", None)
    if descriptor is not None and "db_name" in descriptor.fields_by_name and request.db_name:
        return str(request.db_name)
    if context is not None:
        try:
            metadata = context.invocation_metadata() or ()
        except Exception:  # an in-process call without a real context  # noqa: BLE001
            metadata = ()
        for key, value in metadata:
            if key == DBNAME_METADATA and value:
                return value if isinstance(value, str) else value.decode()
    return DEFAULT_DATABASE


def current_database() -> str:
    """The database of the RPC being served ("default" outside one)."""
    return _current.get()


def enter_database(name: str) -> contextvars.Token[str]:
    return _current.set(name or DEFAULT_DATABASE)


def leave_database(token: contextvars.Token[str]) -> None:
    _current.reset(token)
