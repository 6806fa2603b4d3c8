"""``GetReplicas`` of the coordinator (mixed into ``CoordinatorService``): the replica view of ``query/replicas.py``.

A collection that is not loaded, or not known, has no replicas: an empty
answer, not an error, as Milvus 2.6's query coordinator answers.
"""

from __future__ import annotations

import grpc

from common.grpcutil import ok_status, rpc_method
from coordinator.catalog import CollectionMeta
from coordinator.query.coord import QueryCoordinator
from protos import coordinator_pb2 as pb


class ReplicaRPCs:
    """``GetReplicas``."""

    _query: QueryCoordinator

    async def _meta(self, ref: pb.CollectionRef) -> CollectionMeta:
        raise NotImplementedError

    @rpc_method(pb.GetReplicasResponse)
    async def GetReplicas(self, request: pb.CollectionRef, context: grpc.aio.ServicerContext) -> pb.GetReplicasResponse:
        if not request.name and not self._query.is_loaded(request.collection_id):
            return pb.GetReplicasResponse(status=ok_status(), collection_id=request.collection_id)
        meta = await self._meta(request)
        return pb.GetReplicasResponse(
            status=ok_status(),
            collection_id=meta.collection_id,
            partition_ids=self._query.loaded_partitions(meta),
            replicas=[
                pb.ReplicaInfo(
                    replica_id=r.replica_id,
                    node_ids=r.node_ids,
                    shards=[
                        pb.ShardReplica(
                            vchannel=s.vchannel,
                            leader_id=s.leader_id,
                            leader_address=s.leader_address,
                            node_ids=s.node_ids,
                        )
                        for s in r.shards
                    ],
                )
                for r in self._query.replicas(meta)
            ],
        )
