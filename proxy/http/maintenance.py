"""``/v2/vectordb/collections/flush``, ``compact`` and ``get_compaction_state`` (Milvus 2.6).

- ``flush`` (``collectionName``): ``Flush``, then ``GetFlushState`` every half
  second until the sealed segments are persisted, as Milvus's REST handler
  waits; answers ``{}`` once they are, or the ``Request-Timeout`` error;
- ``compact`` (``collectionName``, ``isClustering``): ``ManualCompaction``,
  answers ``{"compactionID"}`` (clustering compaction is refused as the gRPC
  call refuses it);
- ``get_compaction_state`` (``jobID``): ``{"compactionID", "state"``
  (``Executing`` / ``Completed``), ``"executingPlanNumber", "timeoutPlanNumber",
  "completedPlanNumber"}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pymilvus.grpc_gen import common_pb2, milvus_pb2

from proxy.http.body import Body
from proxy.http.invoke import Call
from proxy.http.reply import Route

FLUSH_POLL_SECONDS = 0.5  # Milvus's waitForFlush ticker


async def flush(call: Call, body: Body) -> Any:
    name = body.name("collectionName")
    resp = await call("Flush", milvus_pb2.FlushRequest(collection_names=[name]))
    state = milvus_pb2.GetFlushStateRequest(
        collection_name=name, segmentIDs=list(resp.coll_segIDs[name].data), flush_ts=resp.coll_flush_ts[name])
    # Each poll runs within what is left of the request's deadline: past it, the call raises the timeout.
    while not (await call("GetFlushState", state)).flushed:
        await asyncio.sleep(FLUSH_POLL_SECONDS)
    return {}


async def compact(call: Call, body: Body) -> Any:
    request = milvus_pb2.ManualCompactionRequest(
        collection_name=body.name("collectionName"), majorCompaction=body.flag("isClustering", False))
    return {"compactionID": (await call("ManualCompaction", request)).compactionID}


async def get_compaction_state(call: Call, body: Body) -> Any:
    job = body.integer("jobID", 0)
    resp = await call("GetCompactionState", milvus_pb2.GetCompactionStateRequest(compactionID=job))
    return {
        "compactionID": job, "state": common_pb2.CompactionState.Name(resp.state),
        "executingPlanNumber": resp.executingPlanNo, "timeoutPlanNumber": resp.timeoutPlanNo,
        "completedPlanNumber": resp.completedPlanNo,
    }


ROUTES: dict[str, Route] = {"flush": flush, "compact": compact, "get_compaction_state": get_compaction_state}
