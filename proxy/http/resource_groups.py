"""``/v2/vectordb/resource_groups/*``: create, drop, alter, describe, list, transfer_replica.

Each runs the gRPC RPC of the same name (``proxy/resource_groups.py``), so it answers what the
gRPC port answers: one group, ``__default_resource_group``, with Milvus's texts and codes for the
rest. The bodies are Milvus 2.6's: ``{"name", "config": {"requests": {"node_num"}, "limits":
{"node_num"}, "transfer_from": [{"resource_group"}], "transfer_to": [...], "node_filter":
{"node_labels": {...}}}}``; ``alter`` takes ``{"resource_groups": {NAME: config}}``;
``transfer_replica`` ``{"sourceRgName", "targetRgName", "collectionName", "replicaNum"}``.
``describe`` answers ``{"resource_group": {...}}`` with the gRPC message's field names, leaving
out empty values as Milvus's JSON does.
"""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2, rg_pb2

from proxy.http.body import Body
from proxy.http.errors import invalid
from proxy.http.invoke import Call
from proxy.http.reply import Route


def _limit(raw: Any, where: str) -> rg_pb2.ResourceGroupLimit:
    if raw is None:
        return rg_pb2.ResourceGroupLimit()
    node_num = raw.get("node_num", 0) if isinstance(raw, dict) else None
    if isinstance(node_num, bool) or not isinstance(node_num, int):
        raise invalid(f"`{where}` must be {{\"node_num\": INTEGER}}")
    return rg_pb2.ResourceGroupLimit(node_num=node_num)


def _transfers(raw: Any, where: str) -> list[rg_pb2.ResourceGroupTransfer]:
    items = raw or []
    if not isinstance(items, list) or not all(
        isinstance(t, dict) and isinstance(t.get("resource_group"), str) for t in items
    ):
        raise invalid(f"`{where}` must be a list of {{\"resource_group\": NAME}}")
    return [rg_pb2.ResourceGroupTransfer(resource_group=t["resource_group"]) for t in items]


def _config(raw: Any, where: str) -> rg_pb2.ResourceGroupConfig:
    if not isinstance(raw, dict):
        raise invalid(f"`{where}` must be an object")
    config = rg_pb2.ResourceGroupConfig(
        requests=_limit(raw.get("requests"), f"{where}.requests"),
        limits=_limit(raw.get("limits"), f"{where}.limits"),
        transfer_from=_transfers(raw.get("transfer_from"), f"{where}.transfer_from"),
        transfer_to=_transfers(raw.get("transfer_to"), f"{where}.transfer_to"),
    )
    node_filter = raw.get("node_filter")
    if node_filter is not None:
        labels = node_filter.get("node_labels") if isinstance(node_filter, dict) else None
        if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
            raise invalid(f"`{where}.node_filter` must be {{\"node_labels\": {{NAME: VALUE}}}}")
        config.node_filter.node_labels.extend(common_pb2.KeyValuePair(key=k, value=v) for k, v in labels.items())
    return config


async def create(call: Call, body: Body) -> Any:
    request = milvus_pb2.CreateResourceGroupRequest(resource_group=body.name("name"))
    if body.raw("config") is not None:
        request.config.CopyFrom(_config(body.raw("config"), "config"))
    await call("CreateResourceGroup", request)
    return {}


async def drop(call: Call, body: Body) -> Any:
    await call("DropResourceGroup", milvus_pb2.DropResourceGroupRequest(resource_group=body.name("name")))
    return {}


async def alter(call: Call, body: Body) -> Any:
    groups = body.required("resource_groups")
    if not isinstance(groups, dict):
        raise invalid("`resource_groups` must map group names to configs")
    request = milvus_pb2.UpdateResourceGroupsRequest()
    for name, raw in groups.items():
        request.resource_groups[name].CopyFrom(_config(raw, f"resource_groups.{name}"))
    await call("UpdateResourceGroups", request)
    return {}


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ListResourceGroups", milvus_pb2.ListResourceGroupsRequest())
    return list(resp.resource_groups)


def _limit_json(limit: rg_pb2.ResourceGroupLimit) -> dict[str, int]:
    return {"node_num": limit.node_num} if limit.node_num else {}


def _config_json(config: rg_pb2.ResourceGroupConfig) -> dict[str, Any]:
    out: dict[str, Any] = {"requests": _limit_json(config.requests), "limits": _limit_json(config.limits)}
    if config.transfer_from:
        out["transfer_from"] = [{"resource_group": t.resource_group} for t in config.transfer_from]
    if config.transfer_to:
        out["transfer_to"] = [{"resource_group": t.resource_group} for t in config.transfer_to]
    if config.node_filter.node_labels:
        out["node_filter"] = {"node_labels": [{"key": kv.key, "value": kv.value} for kv in config.node_filter.node_labels]}
    return out


def describe_json(group: milvus_pb2.ResourceGroup) -> dict[str, Any]:
    """A ``ResourceGroup`` as Milvus's REST API answers it (Go's JSON of the message: empty values left out)."""
    out: dict[str, Any] = {"name": group.name}
    if group.capacity:
        out["capacity"] = group.capacity
    if group.num_available_node:
        out["num_available_node"] = group.num_available_node
    for key in ("num_loaded_replica", "num_outgoing_node", "num_incoming_node"):
        if getattr(group, key):
            out[key] = dict(getattr(group, key))
    out["config"] = _config_json(group.config)
    if group.nodes:
        out["nodes"] = [{k: v for k, v in (("node_id", n.node_id), ("address", n.address), ("hostname", n.hostname)) if v}
                        for n in group.nodes]
    return out


async def describe(call: Call, body: Body) -> Any:
    resp = await call("DescribeResourceGroup", milvus_pb2.DescribeResourceGroupRequest(resource_group=body.name("name")))
    return {"resource_group": describe_json(resp.resource_group)}


def _replicas(body: Body) -> int:
    body.required("replicaNum")
    return body.integer("replicaNum", 0)


async def transfer_replica(call: Call, body: Body) -> Any:
    request = milvus_pb2.TransferReplicaRequest(
        source_resource_group=body.name("sourceRgName"), target_resource_group=body.name("targetRgName"),
        collection_name=body.name("collectionName"), num_replica=_replicas(body),
    )
    await call("TransferReplica", request)
    return {}


ROUTES: dict[str, Route] = {
    "create": create, "drop": drop, "alter": alter, "describe": describe, "list": list_,
    "transfer_replica": transfer_replica,
}
