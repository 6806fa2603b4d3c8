"""``GetQuerySegmentInfo`` and ``LoadBalance`` of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them.

``GetQuerySegmentInfo`` lists the sealed segments the query nodes serve for
a collection (``coordinator/query/segments.py``): ids, rows, level, the nodes
holding it (a node per replica) and the vector index it is searched through.
As in Milvus: the collection is looked up unchecked (a bad name is a missing
collection), growing data is not listed, a collection that is not loaded has
no segments (an empty success), every segment's state is ``Sealed``, and
``mem_size`` and ``nodeID`` are not filled.

``LoadBalance`` moves sealed segments off a query node to others of its
replica. Its checks are Milvus's, in its order, with its texts: the collection
must be fully loaded, the source node in one of its replicas, each
destination in the same replica, each named segment on the source. A request
that leaves nothing to move (the replica has no other node, as in a
standalone) succeeds as in Milvus; moving segments on request is not
supported (the coordinator places them by row count), and says so.
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2

from common.coordapi import LoadState
from common.coordapi.api import QuerySegment
from common.errors import CollectionNotFullyLoaded, ErrorCode, NotSupported, StrataError
from proxy.metacache import CollectionEntry
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


def _node_not_found(node_id: int, message: str) -> StrataError:
    """Milvus's ``merr.WrapErrNodeNotFound(node, message)`` (code 901)."""
    return StrataError(f"{message}: node not found[node={node_id}]", ErrorCode.NODE_NOT_FOUND)


class SegmentRPCs(ProxyParts):
    async def _served(self, coll: CollectionEntry) -> list[QuerySegment]:
        return list(await self._coord.query_segments(coll.collection_id))

    @milvus_rpc(milvus_pb2.GetQuerySegmentInfoResponse)
    async def GetQuerySegmentInfo(
        self, request: milvus_pb2.GetQuerySegmentInfoRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetQuerySegmentInfoResponse:
        coll = await self._lookup(request.collectionName)
        return milvus_pb2.GetQuerySegmentInfoResponse(
            status=success(),
            infos=[
                milvus_pb2.QuerySegmentInfo(
                    segmentID=s.segment_id,
                    collectionID=coll.collection_id,
                    partitionID=s.partition_id,
                    num_rows=s.rows,
                    index_name=s.index_name,
                    indexID=s.index_id,
                    state=common_pb2.Sealed,
                    nodeIds=list(s.node_ids),
                    level=int(s.level),  # Strata's levels have milvus-proto's numbers
                )
                for s in await self._served(coll)
            ],
        )

    @milvus_rpc(common_pb2.Status)
    async def LoadBalance(
        self, request: milvus_pb2.LoadBalanceRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        coll = await self._lookup(request.collectionName)
        cid, src = coll.collection_id, request.src_nodeID
        view = await self._coord.query_view(cid)
        if view.state != LoadState.LOADED:
            raise CollectionNotFullyLoaded(f"collection not fully loaded[collection={cid}]")
        replicas = await self._coord.replicas(cid)
        replica = next((r for r in replicas.replicas if src in r.node_ids), None)
        if replica is None:
            raise _node_not_found(src, f"source node not found in any replica of collection {cid}")
        for dst in request.dst_nodeIDs:
            if dst not in replica.node_ids:
                raise _node_not_found(dst, "destination node not found in the same replica")
        on_source = {s.segment_id for s in await self._served(coll) if src in s.node_ids}
        for sid in request.sealed_segmentIDs:
            if sid not in on_source:
                raise StrataError(
                    f"failed to balance segments: segment {sid} not found in source node {src}", ErrorCode.REFUSED
                )
        targets = set(request.dst_nodeIDs or replica.node_ids) - {src}
        moving = set(request.sealed_segmentIDs) or on_source
        if targets and moving:
            raise NotSupported(
                f"LoadBalance is not supported for moving segments between query nodes: {len(moving)} segment(s) "
                f"of node {src} to {sorted(targets)}; the coordinator places sealed segments by row count"
            )
        return success()
