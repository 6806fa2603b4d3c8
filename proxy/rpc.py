"""The proxy's RPC boundary: every error becomes a Milvus status in the method's response."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from common.rpcstatus import Describe, Handler, error_boundary, type_and_message
from proxy.status import milvus_status

log = structlog.get_logger().bind(component="proxy")


def _internal_error_in(method: str) -> Describe:
    return lambda err: f"internal error in {method}: {type_and_message(err)}"


def milvus_rpc(response_type: type[Any]) -> Callable[[Handler], Handler]:
    """Answer a ``StrataError`` (or any crash) with a Milvus status in ``response_type``
    (``common.rpcstatus.error_boundary``; a method answering a bare ``common_pb2.Status`` gets it)."""
    return error_boundary(response_type, milvus_status, _internal_error_in, log)
