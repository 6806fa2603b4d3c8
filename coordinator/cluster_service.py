"""The query cluster as Milvus's admin calls show it (mixed into ``CoordinatorService``).

``GetQuerySegments``: the sealed segments a loaded collection is served from
(``query/segments.py``), each with its index name from the catalog; none when
the collection is not loaded (Milvus answers an empty list then too).
``DescribeResourceGroup``: the default resource group, the only one
(``common/resource_groups.py``): every live query node, and each loaded
collection's replica count; any other name is Milvus's not-found error.
"""

from __future__ import annotations

import grpc

from common.grpcutil import ok_status, rpc_method
from common.resource_groups import DEFAULT_RESOURCE_GROUP, resource_group_not_found
from coordinator.catalog import Catalog, CollectionMeta
from coordinator.query.coord import QueryCoordinator
from protos import common_pb2
from protos import coordinator_pb2 as pb


class ClusterRPCs:
    """``GetQuerySegments`` and ``DescribeResourceGroup``."""

    _query: QueryCoordinator
    _catalog: Catalog

    async def _meta(self, ref: pb.CollectionRef) -> CollectionMeta:
        raise NotImplementedError

    @rpc_method(pb.QuerySegmentsResponse)
    async def GetQuerySegments(
        self, request: pb.CollectionRef, context: grpc.aio.ServicerContext
    ) -> pb.QuerySegmentsResponse:
        meta = await self._meta(request)
        names = {i.index_id: i.index_name for i in await self._catalog.list_indexes(meta.collection_id)}
        return pb.QuerySegmentsResponse(
            status=ok_status(),
            collection_id=meta.collection_id,
            segments=[
                pb.QuerySegment(
                    segment_id=s.segment.segment_id,
                    partition_id=s.segment.partition_id,
                    level=common_pb2.SegmentLevel.ValueType(s.segment.level),  # the enums share numbers
                    rows=s.segment.rows,
                    node_ids=s.node_ids,
                    index_id=s.index_id if s.index_id in names else 0,
                    index_name=names.get(s.index_id, ""),
                )
                for s in self._query.served_segments(meta)
            ],
        )

    @rpc_method(pb.ResourceGroupResponse)
    async def DescribeResourceGroup(
        self, request: pb.ResourceGroupRequest, context: grpc.aio.ServicerContext
    ) -> pb.ResourceGroupResponse:
        if request.name != DEFAULT_RESOURCE_GROUP:
            raise resource_group_not_found(request.name)
        return pb.ResourceGroupResponse(
            status=ok_status(),
            name=DEFAULT_RESOURCE_GROUP,
            nodes=[pb.QueryNodeInfo(node_id=n, address=a) for n, a in sorted(self._query.nodes().items())],
            loaded_replicas=self._query.replica_numbers(),
        )
