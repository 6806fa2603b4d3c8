"""``GetReplicas`` of the proxy (mixed into ``MilvusProxy``), as Milvus answers it.

The collection is named by ``collection_name`` (resolved here, unchecked as in
Milvus: a missing or malformed one is "collection not found") or by ``collectionID`` alone (what pymilvus and the
Node.js SDK send). The coordinator builds the replica view
(``coordinator/query/replicas.py``); a collection that is not loaded has no
replicas (an empty success, as in Milvus 2.6). Each shard lists its leader
alone, or with ``with_shard_nodes`` every node of the replica serving it.
Every replica is in Milvus's default resource group (Strata has no others).
"""

from __future__ import annotations

from typing import Any

import grpc
from pymilvus.grpc_gen import milvus_pb2

from common.coordapi.api import ReplicaInfo, Replicas
from common.resource_groups import DEFAULT_RESOURCE_GROUP
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


def _replica(r: ReplicaInfo, resp: Replicas, shard_nodes: bool) -> Any:
    return milvus_pb2.ReplicaInfo(
        replicaID=r.replica_id,
        collectionID=resp.collection_id,
        partition_ids=list(resp.partition_ids),
        shard_replicas=[
            milvus_pb2.ShardReplica(
                leaderID=s.leader_id,
                leader_addr=s.leader_address,
                dm_channel_name=s.vchannel,
                node_ids=list(s.node_ids) if shard_nodes else [s.leader_id],
            )
            for s in r.shards
        ],
        node_ids=list(r.node_ids),
        resource_group_name=DEFAULT_RESOURCE_GROUP,
    )


class ReplicaRPCs(ProxyParts):
    @milvus_rpc(milvus_pb2.GetReplicasResponse)
    async def GetReplicas(
        self, request: milvus_pb2.GetReplicasRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.GetReplicasResponse:
        collection_id = request.collectionID
        if request.collection_name:
            # Looked up unchecked, as Milvus's GetReplicas does: a bad name is a missing collection.
            collection_id = (await self._lookup(request.collection_name)).collection_id
        resp = await self._coord.replicas(collection_id)
        return milvus_pb2.GetReplicasResponse(
            status=success(), replicas=[_replica(r, resp, request.with_shard_nodes) for r in resp.replicas]
        )
