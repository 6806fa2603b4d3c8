"""The RESTful API v2's privilege groups, v2 grants, flush and compaction over plain HTTP against the
session's standalone: Milvus 2.6's paths and bodies, the effects seen through pymilvus."""

from __future__ import annotations

from pymilvus import MilvusClient
from pymilvus.grpc_gen import common_pb2

from tests.e2e.restutil import ok, post
from tests.e2e.util import unique_name
from tests.harness import Standalone

DIM = 4


def _groups(milvus: MilvusClient) -> dict[str, set[str]]:
    return {g["privilege_group"]: set(g["privileges"]) for g in milvus.list_privilege_groups()}


def test_privilege_groups_by_rest(standalone: Standalone, milvus: MilvusClient) -> None:
    group = unique_name("pg")
    body = {"privilegeGroupName": group}
    assert ok(standalone, "privilege_groups/create", body) == {}
    assert ok(standalone, "privilege_groups/add_privileges_to_group",
              {**body, "privileges": ["Search", "Query", "Insert"]}) == {}
    assert _groups(milvus)[group] == {"Search", "Query", "Insert"}
    assert ok(standalone, "privilege_groups/remove_privileges_from_group", {**body, "privileges": ["Insert"]}) == {}
    listed = ok(standalone, "privilege_groups/list", {})["privilegeGroups"]
    [mine] = [g for g in listed if g["privilegeGroupName"] == group]
    assert set(mine["privileges"].split(",")) == {"Search", "Query"}  # comma-joined, as Milvus answers
    assert {g["privilegeGroupName"] for g in listed} == set(_groups(milvus))  # built-in groups included
    assert post(standalone, "privilege_groups/create", {})["code"] == 1802  # privilegeGroupName is required
    assert ok(standalone, "privilege_groups/drop", body) == {}
    assert group not in _groups(milvus)


def test_grant_and_revoke_privilege_v2_by_rest(standalone: Standalone, milvus: MilvusClient) -> None:
    role, coll = unique_name("r2"), unique_name("c2")
    milvus.create_collection(coll, dimension=DIM)
    milvus.create_role(role)
    grant = {"roleName": role, "privilege": "Search", "collectionName": coll, "dbName": "default"}
    assert ok(standalone, "roles/grant_privilege_v2", grant) == {}
    granted = milvus.describe_role(role)["privileges"]
    assert [(g["object_name"], g["privilege"]) for g in granted] == [(coll, "Search")]
    assert ok(standalone, "roles/revoke_privilege_v2", grant) == {}
    assert milvus.describe_role(role)["privileges"] == []


def test_flush_compact_and_compaction_state_by_rest(standalone: Standalone, milvus: MilvusClient) -> None:
    name = unique_name("fl")
    milvus.create_collection(name, dimension=DIM)
    milvus.insert(name, [{"id": i, "vector": [float(i)] * DIM} for i in range(10)])
    # flush answers once the sealed segments are persisted (Milvus's REST flush waits for it): the
    # rows are in flushed segments as soon as it answers, no polling.
    assert ok(standalone, "collections/flush", {"collectionName": name}) == {}
    segments = milvus.list_persistent_segments(name)
    assert sum(s.num_rows for s in segments) == 10 and all(common_pb2.SegmentState.Name(s.state) == "Flushed" for s in segments), segments
    assert ok(standalone, "collections/get_stats", {"collectionName": name}) == {"rowCount": 10}
    job = ok(standalone, "collections/compact", {"collectionName": name})["compactionID"]
    assert isinstance(job, int) and job > 0
    state = ok(standalone, "collections/get_compaction_state", {"jobID": job})
    assert set(state) == {"compactionID", "state", "executingPlanNumber", "timeoutPlanNumber", "completedPlanNumber"}
    assert state["compactionID"] == job and state["state"] in ("Executing", "Completed")
    assert milvus.get_compaction_state(job) in ("Executing", "Completed")
    refused = post(standalone, "collections/compact", {"collectionName": name, "isClustering": True})
    assert refused["code"] != 0 and "clustering" in refused["message"]
    assert post(standalone, "collections/flush", {"collectionName": unique_name("none")})["code"] == 100
