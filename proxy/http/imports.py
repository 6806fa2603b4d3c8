"""``/v2/vectordb/jobs/import/*``: create, list, get_progress (and describe, its other name).

The bulk import the gRPC port runs (``Import``, ``GetImportState``, ``ListImportTasks``:
``proxy/jobs.py``), with Milvus 2.6's REST JSON: ``files`` is a list of file groups (a group is
one Parquet or JSON file, or the ``.npy`` files of one import), ``jobId`` a string, and a job's
``state`` one of ``Pending``, ``Importing``, ``Completed``, ``Failed``, its ``progress`` 0-100.
A Strata job imports all its files at once, so each file in ``details`` shows the job's state and
progress; sizes and row counts per file are not tracked, so they are not answered.
"""

from __future__ import annotations

from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from proxy.http.body import Body
from proxy.http.errors import invalid
from proxy.http.invoke import Call
from proxy.http.reply import Route

#: The gRPC import states as Milvus's REST API names its job states.
STATES = {
    common_pb2.ImportPending: "Pending",
    common_pb2.ImportStarted: "Importing",
    common_pb2.ImportCompleted: "Completed",
    common_pb2.ImportFailed: "Failed",
}


def _files(body: Body) -> list[str]:
    groups = body.required("files")
    if not isinstance(groups, list) or not all(
        isinstance(g, list) and g and all(isinstance(f, str) and f for f in g) for g in groups
    ):
        raise invalid("`files` must be a list of file groups, each a non-empty list of file paths")
    return [name for group in groups for name in group]


def _options(body: Body) -> list[common_pb2.KeyValuePair]:
    options = body.mapping("options")
    if not all(isinstance(v, str) for v in options.values()):
        raise invalid("`options` must map names to strings")
    return [common_pb2.KeyValuePair(key=k, value=v) for k, v in options.items()]


def _job_id(body: Body) -> int:
    raw = body.name("jobId")
    if not raw.isdigit():
        raise invalid(f"`jobId` must be the decimal id of an import job, got {raw!r}")
    return int(raw)


def _infos(state: milvus_pb2.GetImportStateResponse) -> dict[str, str]:
    return {kv.key: kv.value for kv in state.infos}


def _common(state: milvus_pb2.GetImportStateResponse) -> dict[str, Any]:
    infos = _infos(state)
    out: dict[str, Any] = {
        "jobId": str(state.id),
        "collectionName": infos.get("collection", ""),
        "state": STATES.get(state.state, "Pending"),
        "progress": int(infos.get("progress_percent", "0") or 0),
    }
    if infos.get("failed_reason"):
        out["reason"] = infos["failed_reason"]
    return out


async def create(call: Call, body: Body) -> Any:
    request = milvus_pb2.ImportRequest(
        collection_name=body.name("collectionName"), partition_name=body.text("partitionName"),
        files=_files(body), options=_options(body),
    )
    resp = await call("Import", request)
    return {"jobId": str(resp.tasks[0])}


async def list_(call: Call, body: Body) -> Any:
    resp = await call("ListImportTasks", milvus_pb2.ListImportTasksRequest(collection_name=body.text("collectionName")))
    return {"records": [_common(task) for task in resp.tasks]}


async def get_progress(call: Call, body: Body) -> Any:
    state = await call("GetImportState", milvus_pb2.GetImportStateRequest(task=_job_id(body)))
    out = _common(state)
    done = state.state == common_pb2.ImportCompleted
    files = [f for f in _infos(state).get("files", "").split(",") if f]
    out.update({
        "importedRows": state.row_count if done else 0,
        "totalRows": state.row_count,
        "completeTime": "",  # Strata keeps when a job was created, not when it finished
        "details": [{"fileName": f, "state": out["state"], "progress": out["progress"]} for f in files],
    })
    return out


ROUTES: dict[str, Route] = {"create": create, "list": list_, "get_progress": get_progress, "describe": get_progress}
