"""GetMetrics ``system_info``: the cluster as Milvus's ``SystemTopology`` (``pkg/util/metricsinfo/topology.go``).

Milvus's proxy asks each coordinator for its metrics and joins them into one
graph: ``nodes_info`` lists the query nodes, the query coordinator, the data
nodes, the data coordinator, the root coordinator and last the proxy itself,
each ``{"identifier", "connected", "infos"}``; ``connected`` holds the edges
``{"connected_identifier", "type", "target_type"}``, ``forward`` from the proxy
to each coordinator and between coordinators, ``manage`` from a coordinator to
its nodes. Strata builds it from the coordinator's ``cluster`` view (the etcd
sessions, ``coordinator/console.py``):

- the active coordinator stands for ``rootcoord``, ``querycoord`` and
  ``datacoord`` (one process, as Milvus 2.6's MixCoord: one server id for the three);
- each ``querynode`` session is a query node under ``querycoord``;
- each ``streamingnode`` session (they flush, the data node's job in Milvus
  2.6's streaming architecture) is a ``streamingnode`` under ``datacoord``;
- this proxy is the last node; other proxies are not listed (Milvus lists none).

Figures are reported only where they are true: the hardware fields are this
host's (CPU count and usage, memory) for a node on the proxy's own host (same
IP), and 0 for a node elsewhere; created and updated times are known only for
the proxy (others ``""``); no node carries quota metrics. This module is pure
(no I/O): ``system_topology`` takes the view and the proxy's own ``infos``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PROXY = "proxy"
ROOTCOORD = "rootcoord"
QUERYCOORD = "querycoord"
DATACOORD = "datacoord"
QUERYNODE = "querynode"
STREAMINGNODE = "streamingnode"
FORWARD = "forward"  # metricsinfo.Forward
MANAGE = "manage"  # metricsinfo.CoordConnectToNode

# Strata's session roles and the Milvus component each stands for under its coordinator.
_NODE_ROLES = {"querynode": (QUERYNODE, QUERYCOORD), "streamingnode": (STREAMINGNODE, DATACOORD)}
COORDINATOR_SESSION_ROLE = "coordinator"

# Each component's system_configurations, with Strata's values where it has one.
_CONFIGURATIONS: dict[str, dict[str, Any]] = {
    QUERYNODE: {"simd_type": "auto"},
    QUERYCOORD: {"search_channel_prefix": "", "search_result_channel_prefix": ""},
    STREAMINGNODE: {"flush_insert_buffer_size": 0},
    DATACOORD: {"segment_max_size": 0},
    ROOTCOORD: {"min_segment_size_to_enable_index": 0},
}


@dataclass(frozen=True, slots=True, kw_only=True)
class HostFigures:
    """This host's hardware as ``hardware_infos`` reports it (the proxy's own reading)."""

    cpu_core_count: int
    cpu_core_usage: float
    memory: int
    memory_usage: int


def _host(address: str) -> str:
    return address.rsplit(":", 1)[0] if ":" in address else address


def _edge(identifier: int, kind: str, target: str) -> dict[str, Any]:
    return {"connected_identifier": identifier, "type": kind, "target_type": target}


def _infos(*, role: str, node_id: int, address: str, proxy: dict[str, Any], host: HostFigures) -> dict[str, Any]:
    here = _host(address) == _host(proxy["hardware_infos"]["ip"])
    return {
        "has_error": False,
        "error_reason": "",
        "name": f"{role}{node_id}",
        "hardware_infos": {
            "ip": address,
            "cpu_core_count": host.cpu_core_count if here else 0,
            "cpu_core_usage": host.cpu_core_usage if here else 0.0,
            "memory": host.memory if here else 0,
            "memory_usage": host.memory_usage if here else 0,
            "disk": 0,
            "disk_usage": 0,
        },
        "system_info": dict(proxy["system_info"]),  # one build and deploy mode for the whole cluster
        "created_time": "",
        "updated_time": "",
        "type": role,
        "id": node_id,
        "system_configurations": dict(_CONFIGURATIONS[role]),
        "quota_metrics": None,
    }


def _active_coordinator(sessions: list[dict[str, Any]]) -> dict[str, Any] | None:
    coords = [s for s in sessions if s.get("role") == COORDINATOR_SESSION_ROLE]
    leaders = [s for s in coords if s.get("leader")]
    found = leaders or coords
    return found[0] if found else None


def system_topology(proxy: dict[str, Any], cluster: dict[str, Any] | None, host: HostFigures) -> dict[str, Any]:
    """The ``system_info`` answer: ``proxy`` is this proxy's ``infos``; ``cluster`` the coordinator's
    ``cluster`` view, or None when the coordinator could not be asked (then the proxy alone, as Milvus
    answers when its coordinators fail)."""
    me = proxy["id"]
    proxy_node: dict[str, Any] = {"identifier": me, "connected": [], "infos": proxy}
    sessions: list[dict[str, Any]] = list((cluster or {}).get("sessions", []))
    coord = _active_coordinator(sessions)
    if coord is None:
        return {"nodes_info": [proxy_node]}
    cid, caddr = int(coord["server_id"]), str(coord["address"])
    coords: dict[str, dict[str, Any]] = {
        role: {"identifier": cid, "connected": [],
               "infos": _infos(role=role, node_id=cid, address=caddr, proxy=proxy, host=host)}
        for role in (QUERYCOORD, DATACOORD, ROOTCOORD)
    }
    nodes: dict[str, list[dict[str, Any]]] = {QUERYCOORD: [], DATACOORD: []}
    for s in sessions:
        if s.get("role") not in _NODE_ROLES:
            continue
        role, owner = _NODE_ROLES[s["role"]]
        nid = int(s["server_id"])
        nodes[owner].append({"identifier": nid, "connected": None,
                             "infos": _infos(role=role, node_id=nid, address=str(s["address"]), proxy=proxy,
                                             host=host)})
        coords[owner]["connected"].append(_edge(nid, MANAGE, role))
    coords[QUERYCOORD]["connected"] += [_edge(cid, FORWARD, ROOTCOORD), _edge(cid, FORWARD, DATACOORD)]
    coords[DATACOORD]["connected"] += [_edge(cid, FORWARD, ROOTCOORD)]
    coords[ROOTCOORD]["connected"] += [_edge(cid, FORWARD, QUERYCOORD), _edge(cid, FORWARD, DATACOORD)]
    proxy_node["connected"] = [_edge(cid, FORWARD, role) for role in (QUERYCOORD, DATACOORD, ROOTCOORD)]
    return {"nodes_info": [*nodes[QUERYCOORD], coords[QUERYCOORD], *nodes[DATACOORD], coords[DATACOORD],
                           coords[ROOTCOORD], proxy_node]}
