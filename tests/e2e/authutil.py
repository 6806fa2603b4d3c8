"""Helpers for the tests of authentication and RBAC: a standalone with authorization on."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
from pymilvus import MilvusClient

from tests.harness import Standalone

AUTH_ENV = {"STRATA_COMMON_SECURITY_AUTHORIZATIONENABLED": "true"}
ROOT_TOKEN = "root:Milvus"


@contextlib.contextmanager
def auth_standalone(data_dir: Path, env: dict[str, str] | None = None) -> Iterator[Standalone]:
    s = Standalone(data_dir, env={**AUTH_ENV, **(env or {})})
    s.start()
    try:
        yield s
    finally:
        try:
            s.stop()
        finally:
            s.kill()


def stub(client: MilvusClient) -> Any:
    """The client's MilvusService stub: its channel sends the client's authorization metadata."""
    return client._get_connection()._stub


def grpc_code(call: Any) -> grpc.StatusCode:
    """The gRPC code ``call()`` ends with (OK if it returns)."""
    try:
        call()
    except grpc.RpcError as err:
        return err.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def denied(err: BaseException) -> bool:
    """Whether a pymilvus call failed with Milvus's permission denial (raw gRPC or wrapped)."""
    if isinstance(err, grpc.RpcError):
        return err.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[no-any-return]
    return "permission deny" in str(err)
