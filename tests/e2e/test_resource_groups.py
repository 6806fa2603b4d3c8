"""Resource groups as Milvus 2.6 answers them for its default group, through pymilvus, against the session's standalone.

Strata has one resource group, ``__default_resource_group``, holding every
query node. It is listed and described as Milvus describes it (capacity
1,000,000, its query node, each loaded collection's replicas by name, its
config). The calls a one-group cluster can take answer Milvus's texts and
codes; creating a second group, or reconfiguring the default one, is refused
as not supported, saying why.
"""

from __future__ import annotations

import pytest
from pymilvus import MilvusClient, MilvusException
from pymilvus.client.types import ResourceGroupConfig
from pymilvus.grpc_gen import milvus_pb2, rg_pb2

from tests.e2e.util import unique_name

DEFAULT = "__default_resource_group"
SAME = f"source resource group and target resource group should not be the same, resource group: {DEFAULT}: invalid parameter"


def _refused(call: object, code: int, message: str) -> None:
    with pytest.raises(MilvusException) as err:
        call()  # type: ignore[operator]
    assert (err.value.code, err.value.message) == (code, message)


def test_the_default_group_is_listed_and_described(milvus: MilvusClient) -> None:
    name = unique_name("rg")
    milvus.create_collection(name, dimension=4)  # loaded, one replica
    assert milvus.list_resource_groups() == [DEFAULT]
    info = milvus.describe_resource_group(DEFAULT)
    [replica] = milvus.describe_replica(name)
    assert info.name == DEFAULT and info.capacity == 1_000_000
    assert info.num_available_node == 1
    assert [n.node_id for n in info.nodes] == list(replica.group_nodes)
    assert info.nodes[0].address.startswith("127.0.0.1:")
    assert info.num_loaded_replica[name] == 1
    assert dict(info.num_outgoing_node) == {} and dict(info.num_incoming_node) == {}
    assert (info.config.requests.node_num, info.config.limits.node_num) == (0, 1_000_000)
    milvus.release_collection(name)
    assert name not in milvus.describe_resource_group(DEFAULT).num_loaded_replica
    _refused(lambda: milvus.describe_resource_group("rg_x"), 300, "resource group not found[rg=rg_x]")


def test_creating_and_dropping_groups_answer_as_milvus(milvus: MilvusClient) -> None:
    _refused(
        lambda: milvus.create_resource_group("1rg"),
        1100,
        "Invalid resource group name 1rg. the first character of a resource group name must be an underscore "
        "or letter: invalid parameter",
    )
    _refused(
        lambda: milvus.create_resource_group(DEFAULT),
        301,
        f"resource group already exist, but create with different config[rg={DEFAULT}]",
    )
    stub = milvus._get_connection()._stub
    same = rg_pb2.ResourceGroupConfig(
        requests=rg_pb2.ResourceGroupLimit(node_num=0), limits=rg_pb2.ResourceGroupLimit(node_num=1_000_000)
    )
    again = stub.CreateResourceGroup(milvus_pb2.CreateResourceGroupRequest(resource_group=DEFAULT, config=same))
    assert again.code == 0  # the default group's own config: nothing changes
    with pytest.raises(MilvusException, match="Strata has one resource group") as err:
        milvus.create_resource_group("rg_two")
    assert err.value.code == 6
    assert milvus.list_resource_groups() == [DEFAULT]

    milvus.drop_resource_group("rg_never_created")  # dropping a missing group succeeds, as in Milvus
    milvus.create_collection(unique_name("rg"), dimension=4)  # loaded: a replica in the default group
    with pytest.raises(MilvusException) as err:
        milvus.drop_resource_group(DEFAULT)
    assert err.value.code == 1100
    assert err.value.message.startswith(
        f"some replicas still loaded in resource group[{DEFAULT}], release it first: "
        f"invalid parameter[expected=empty resource group][actual=resource group {DEFAULT} has collection "
    )
    for name in milvus.list_collections():  # the session's other collections too: the group must be empty
        milvus.release_collection(name)
    _refused(
        lambda: milvus.drop_resource_group(DEFAULT),
        1100,
        f"default resource group is not deletable: invalid parameter[expected=not default resource group][actual={DEFAULT}]",
    )


def test_updates_and_transfers_answer_as_milvus(milvus: MilvusClient) -> None:
    _refused(
        lambda: milvus.update_resource_groups({"rg_x": ResourceGroupConfig(requests={"node_num": 1})}),
        300,
        "resource group not found[rg=rg_x]",
    )
    with pytest.raises(MilvusException, match="Strata has one resource group") as err:
        milvus.update_resource_groups({DEFAULT: ResourceGroupConfig(requests={"node_num": 1}, limits={"node_num": 1})})
    assert err.value.code == 6

    name = unique_name("rg")
    milvus.create_collection(name, dimension=4)
    _refused(lambda: milvus.transfer_replica(DEFAULT, DEFAULT, name, 1), 1100, SAME)
    _refused(
        lambda: milvus.transfer_replica("rg_x", DEFAULT, name, 1),
        300,
        "the source resource group[rg_x] doesn't exist: resource group not found[rg=rg_x]",
    )
    _refused(
        lambda: milvus.transfer_replica(DEFAULT, "rg_x", name, 1),
        300,
        "the target resource group[rg_x] doesn't exist: resource group not found[rg=rg_x]",
    )
    _refused(
        lambda: milvus.transfer_replica(DEFAULT, DEFAULT, "no_such_collection", 1),
        100,
        "collection not found[database=default][collection=no_such_collection]",
    )
    handler = milvus._get_connection()
    _refused(lambda: handler.transfer_node(DEFAULT, DEFAULT, 1), 1100, SAME)
    _refused(
        lambda: handler.transfer_node("rg_x", DEFAULT, 1),
        1100,
        "source resource group not found: invalid parameter[expected=valid resource group][actual=rg_x]",
    )
    _refused(
        lambda: handler.transfer_node(DEFAULT, "rg_x", 1),
        1100,
        "target resource group not found: invalid parameter[expected=valid resource group][actual=rg_x]",
    )
