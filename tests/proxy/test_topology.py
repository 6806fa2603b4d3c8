"""GetMetrics' system topology built from the coordinator's cluster view (proxy/topology.py)."""

from __future__ import annotations

from typing import Any

from proxy.topology import HostFigures, system_topology

HOST = HostFigures(cpu_core_count=8, cpu_core_usage=12.5, memory=1000, memory_usage=400)


def _proxy() -> dict[str, Any]:
    return {"id": 9, "name": "proxy9", "type": "proxy", "hardware_infos": {"ip": "10.0.0.1:19530"},
            "system_info": {"deploy_mode": "DISTRIBUTED", "build_version": "v2.6.0"}}


def test_without_the_cluster_view_the_proxy_is_alone() -> None:
    for view in (None, {"sessions": []}, {"sessions": [{"role": "proxy", "server_id": 9, "address": "10.0.0.1:1"}]}):
        [node] = system_topology(_proxy(), view, HOST)["nodes_info"]
        assert node["identifier"] == 9 and node["connected"] == []


def test_nodes_on_another_host_carry_no_hardware_figures_and_standbys_are_left_out() -> None:
    view = {"sessions": [
        {"role": "coordinator", "server_id": 1, "address": "10.0.0.1:19100", "leader": False},
        {"role": "coordinator", "server_id": 2, "address": "10.0.0.2:19100", "leader": True},
        {"role": "querynode", "server_id": 5, "address": "10.0.0.1:19200"},
        {"role": "streamingnode", "server_id": 6, "address": "10.0.0.3:19300"},
        {"role": "proxy", "server_id": 7, "address": "10.0.0.4:19530"},
    ]}
    nodes = system_topology(_proxy(), view, HOST)["nodes_info"]
    assert [(n["infos"]["type"], n["identifier"]) for n in nodes] == [
        ("querynode", 5), ("querycoord", 2), ("streamingnode", 6), ("datacoord", 2), ("rootcoord", 2), ("proxy", 9)]
    hw = {n["infos"]["type"]: n["infos"]["hardware_infos"] for n in nodes}
    assert (hw["querynode"]["cpu_core_count"], hw["querynode"]["memory"]) == (8, 1000)  # the proxy's host
    assert (hw["querycoord"]["cpu_core_count"], hw["streamingnode"]["memory"]) == (0, 0)  # elsewhere: unknown
    assert all(n["infos"]["system_info"]["build_version"] == "v2.6.0" for n in nodes)
