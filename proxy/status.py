"""Milvus statuses: what pymilvus shows the user when something is wrong."""

from __future__ import annotations

from pymilvus.grpc_gen import common_pb2

from common.errors import CODE_TABLE, ErrorCode, StrataError


def success() -> common_pb2.Status:
    return common_pb2.Status(error_code=common_pb2.Success, code=0, reason="")


def milvus_status(err: StrataError) -> common_pb2.Status:
    info = CODE_TABLE.get(err.code, CODE_TABLE[ErrorCode.UNEXPECTED])
    return common_pb2.Status(
        error_code=info.milvus_legacy, code=info.milvus_code, reason=err.message, detail=err.message
    )
