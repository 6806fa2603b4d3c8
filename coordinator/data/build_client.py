"""The coordinator's calls to query nodes for index builds (``BuildSegmentIndex`` over gRPC)."""

from __future__ import annotations

from common.grpcutil import StubCache
from common.segment_pb import segment_to_pb
from coordinator.catalog import CollectionMeta
from coordinator.data.build_policy import Build
from protos import querynode_pb2, querynode_pb2_grpc

# A build of a large segment takes minutes; the node answers when it is saved.
BUILD_TIMEOUT_SECONDS = 3600.0


class GrpcIndexBuilder:
    """``SegmentIndexBuilder`` over gRPC, one channel per query node."""

    def __init__(self) -> None:
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)

    async def build(self, address: str, *, collection: CollectionMeta, build: Build, params: dict[str, str]) -> bool:
        request = querynode_pb2.BuildSegmentIndexRequest(
            collection_id=collection.collection_id,
            schema_json=collection.latest_schema.to_json(),
            segment=segment_to_pb(build.segment),
            index=querynode_pb2.IndexSpec(
                field_name=build.index.field_name, index_id=build.index.index_id, params=params
            ),
        )
        response = await self._stubs.get(address).BuildSegmentIndex(request, timeout=BUILD_TIMEOUT_SECONDS)
        return response.built

    async def close(self) -> None:
        await self._stubs.close()
