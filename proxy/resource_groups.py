"""Resource group RPCs of the proxy (mixed into ``MilvusProxy``), as Milvus 2.6 answers them for its default group.

Strata has one resource group, ``__default_resource_group``, holding every
query node (``common/resource_groups.py``). ``ListResourceGroups`` names
it; ``DescribeResourceGroup`` shows it as Milvus does: capacity 1,000,000,
its live query nodes, each loaded collection's replica count (by name), no
nodes lent to or borrowed from other groups, and Milvus's config for it
(requesting 0 nodes, limited to 1,000,000).

The other calls answer what Milvus answers wherever a one-group cluster takes
them, with its texts and codes, in its order of checks: creating the default
group again with its own config succeeds, with another config is "already
exist"; dropping a group that does not exist succeeds, dropping the default
one fails (replicas loaded, or not deletable); transfers name a missing group
or the same group on both sides. What would need a second group (creating
one, changing the default group's config) is ``NotSupported``, saying so.
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2, rg_pb2

from common.errors import ResourceGroupNotFound
from common.resource_groups import (
    DEFAULT_CAPACITY,
    DEFAULT_RESOURCE_GROUP,
    already_exists,
    check_resource_group_name,
    invalid_parameter,
    one_group_only,
    resource_group_not_found,
    same_group,
)
from proxy.parts import ProxyParts
from proxy.rpc import milvus_rpc
from proxy.status import success


def default_config() -> rg_pb2.ResourceGroupConfig:
    """The default group's config in Milvus: requests 0 nodes, limits 1,000,000."""
    return rg_pb2.ResourceGroupConfig(
        requests=rg_pb2.ResourceGroupLimit(node_num=0), limits=rg_pb2.ResourceGroupLimit(node_num=DEFAULT_CAPACITY)
    )


def _missing(name: str, role: str) -> ResourceGroupNotFound:
    """TransferReplica's wording for a group that does not exist (Milvus wraps the not-found error)."""
    return ResourceGroupNotFound(f"the {role} resource group[{name}] doesn't exist: {resource_group_not_found(name).message}")


class ResourceGroupRPCs(ProxyParts):
    @milvus_rpc(milvus_pb2.ListResourceGroupsResponse)
    async def ListResourceGroups(
        self, request: milvus_pb2.ListResourceGroupsRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.ListResourceGroupsResponse:
        return milvus_pb2.ListResourceGroupsResponse(status=success(), resource_groups=[DEFAULT_RESOURCE_GROUP])

    @milvus_rpc(milvus_pb2.DescribeResourceGroupResponse)
    async def DescribeResourceGroup(
        self, request: milvus_pb2.DescribeResourceGroupRequest, context: grpc.aio.ServicerContext
    ) -> milvus_pb2.DescribeResourceGroupResponse:
        group = await self._coord.resource_group(request.resource_group)
        names = {c.collection_id: c.name for c in await self._coord.list_collections()}
        return milvus_pb2.DescribeResourceGroupResponse(
            status=success(),
            resource_group=milvus_pb2.ResourceGroup(
                name=group.name,
                capacity=DEFAULT_CAPACITY,
                num_available_node=len(group.nodes),
                # A collection dropped meanwhile is left out, as Milvus does.
                num_loaded_replica={names[c]: n for c, n in group.loaded_replicas.items() if c in names},
                config=default_config(),
                nodes=[common_pb2.NodeInfo(node_id=n.node_id, address=n.address) for n in group.nodes],
            ),
        )

    @milvus_rpc(common_pb2.Status)
    async def CreateResourceGroup(
        self, request: milvus_pb2.CreateResourceGroupRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        check_resource_group_name(request.resource_group)
        if request.resource_group != DEFAULT_RESOURCE_GROUP:
            raise one_group_only("creating a resource group")
        if request.HasField("config") and request.config == default_config():
            return success()  # Milvus: creating an existing group with its own config changes nothing
        raise already_exists(request.resource_group)

    @milvus_rpc(common_pb2.Status)
    async def DropResourceGroup(
        self, request: milvus_pb2.DropResourceGroupRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        if request.resource_group != DEFAULT_RESOURCE_GROUP:
            return success()  # Milvus: dropping a group that does not exist succeeds
        group = await self._coord.resource_group(DEFAULT_RESOURCE_GROUP)
        if group.loaded_replicas:
            loaded = min(group.loaded_replicas)
            raise invalid_parameter(
                "empty resource group",
                f"resource group {DEFAULT_RESOURCE_GROUP} has collection {loaded} loaded",
                f"some replicas still loaded in resource group[{DEFAULT_RESOURCE_GROUP}], release it first",
            )
        raise invalid_parameter(
            "not default resource group", DEFAULT_RESOURCE_GROUP, "default resource group is not deletable"
        )

    @milvus_rpc(common_pb2.Status)
    async def UpdateResourceGroups(
        self, request: milvus_pb2.UpdateResourceGroupsRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        for name in sorted(request.resource_groups):
            if name != DEFAULT_RESOURCE_GROUP:
                raise resource_group_not_found(name)
        config = request.resource_groups.get(DEFAULT_RESOURCE_GROUP)
        if config is not None and config != default_config():
            raise one_group_only("changing the default resource group's config")
        return success()

    @milvus_rpc(common_pb2.Status)
    async def TransferNode(
        self, request: milvus_pb2.TransferNodeRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        source, target = request.source_resource_group, request.target_resource_group
        if source != DEFAULT_RESOURCE_GROUP:
            raise invalid_parameter("valid resource group", source, "source resource group not found")
        if target != DEFAULT_RESOURCE_GROUP:
            raise invalid_parameter("valid resource group", target, "target resource group not found")
        raise same_group(source)

    @milvus_rpc(common_pb2.Status)
    async def TransferReplica(
        self, request: milvus_pb2.TransferReplicaRequest, context: grpc.aio.ServicerContext
    ) -> common_pb2.Status:
        await self._lookup(request.collection_name)  # unchecked, as Milvus: a bad name is a missing collection
        source, target = request.source_resource_group, request.target_resource_group
        if source != DEFAULT_RESOURCE_GROUP:
            raise _missing(source, "source")
        if target != DEFAULT_RESOURCE_GROUP:
            raise _missing(target, "target")
        raise same_group(source)
