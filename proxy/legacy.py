"""Deprecated and internal Milvus RPCs of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

* ``CalcDistance`` is deprecated: Milvus answers "service unavailable:
  CalcDistance deprecated" (code 2, retriable) and so does Strata.
* ``ListIndexedSegment`` and ``DescribeSegmentIndexData`` (the feder
  visualisation calls) were never implemented in Milvus's proxy: the same
  "service unavailable: <name> unimplemented".
* ``Dummy`` is Milvus's benchmark hook: a JSON ``request_type`` of ``query``
  runs that query (``collection_name``, ``partition_names``, ``expr``,
  ``output_fields``) and answers ``{"status": "success"}`` whatever its
  outcome, anything else ``{"status": "fail"}``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from pymilvus.grpc_gen import common_pb2, feder_pb2, milvus_pb2

from common.errors import ServiceUnavailable
from proxy.parts import ProxyParts
from proxy.status import milvus_status

DUMMY_FAIL = '{"status": "fail"}'
DUMMY_SUCCESS = '{"status": "success"}'


def unavailable(reason: str) -> common_pb2.Status:
    """Milvus's ``merr.WrapErrServiceUnavailable(reason)``: code 2, marked retriable."""
    status = milvus_status(ServiceUnavailable(f"service unavailable: {reason}"))
    status.retriable = True
    return status


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


class LegacyRPCs(ProxyParts):
    Query: Callable[..., Awaitable[milvus_pb2.QueryResults]]  # MilvusProxy's own

    async def CalcDistance(
        self, request: milvus_pb2.CalcDistanceRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.CalcDistanceResults:
        return milvus_pb2.CalcDistanceResults(status=unavailable("CalcDistance deprecated"))

    async def ListIndexedSegment(
        self, request: feder_pb2.ListIndexedSegmentRequest, context: grpc.aio.ServicerContext
    ) -> feder_pb2.ListIndexedSegmentResponse:
        return feder_pb2.ListIndexedSegmentResponse(status=unavailable("ListIndexedSegment unimplemented"))

    async def DescribeSegmentIndexData(
        self, request: feder_pb2.DescribeSegmentIndexDataRequest, context: grpc.aio.ServicerContext
    ) -> feder_pb2.DescribeSegmentIndexDataResponse:
        return feder_pb2.DescribeSegmentIndexDataResponse(
            status=unavailable("DescribeSegmentIndexData unimplemented")
        )

    async def Dummy(self, request: milvus_pb2.DummyRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.DummyResponse:
        try:
            body = json.loads(request.request_type)
        except ValueError:
            return milvus_pb2.DummyResponse(response=DUMMY_FAIL)
        if not isinstance(body, dict) or body.get("request_type") != "query":
            return milvus_pb2.DummyResponse(response=DUMMY_FAIL)
        query = milvus_pb2.QueryRequest(
            db_name=str(body.get("dbname", "")),
            collection_name=str(body.get("collection_name", "")),
            partition_names=_strings(body.get("partition_names")),
            expr=str(body.get("expr", "")),
            output_fields=_strings(body.get("output_fields")),
        )
        await self.Query(query, context)  # its status is not looked at, as in Milvus
        return milvus_pb2.DummyResponse(response=DUMMY_SUCCESS)
