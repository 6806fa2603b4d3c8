"""A read plan's filter is bound once, by the proxy: no query node parses the text again.

The query node's service with its real delegator (growing rows) and its worker (a sealed
segment), over a real WAL (local backend). Every way a read reaches them is driven: the
proxy of this process (``QueryNodeService.search`` / ``query``, the plan as it is), a
proxy elsewhere (the ``Search`` / ``Query`` handlers, the plan encoded once) and another
node's delegator (``SearchSegments`` / ``QuerySegments``). The filter parser is counted:
it must never run, while the answers are exactly the filter's rows.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from common.arrowio import ipc_to_table
from common.errors import ErrorCode, InvalidArgument, StrataError
from common.expr import parser
from common.readplan import ReadFilter, ReadPlan, VectorQuery
from common.readplan_pb import decode_read_plan, encode_read_plan
from common.storage.objectstore import ObjectStore
from protos import querynode_pb2 as qpb
from querynode.service.service import QueryNodeService
from segcore.segments.query_vectors import encode_queries
from tests.querynode.delegator import walnode
from tests.querynode.delegator.walnode import SCHEMA, C, Node, V

pytestmark = pytest.mark.timeout(60)

GROWING, SEALED = 77, 10
EVEN = "id % 2 == 0 and id < {top}"


async def _until(check: Any) -> None:
    async with asyncio.timeout(10):
        while not check():
            await asyncio.sleep(0.02)


async def test_no_query_node_parses_the_filter_again(
    node: Node, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ObjectStore.from_uri((tmp_path / "storage").as_uri())
    created, inserted = await walnode.create_and_insert(node, GROWING, range(50, 100))
    sealed = walnode.flushed_segment(store, SEALED, range(50), created.timetick)
    service = QueryNodeService(1, node.source, store)
    service.serve_at(walnode.LOCAL)
    plan = ReadPlan(guarantee_ts=inserted.timetick, filter=ReadFilter.parse(EVEN, SCHEMA, {"top": 90}), timeout=5)
    parses: list[str] = []
    real_parse = parser._parse

    def counted(text: str, *args: Any, **kwargs: Any) -> Any:
        parses.append(text)
        return real_parse(text, *args, **kwargs)

    monkeypatch.setattr(parser, "_parse", counted)
    vectors = np.array([[50.0, 1.0]], np.float32)
    evens = list(range(0, 90, 2))
    try:
        await service.WatchChannel(walnode.watch_request(created, placements=[walnode.placement(sealed)]), None)  # type: ignore[arg-type]
        d = service.delegators[V]
        await _until(lambda: d.serviceable and d.tsafe.value >= inserted.timetick)

        # The proxy of this process: the plan as it is.
        query = VectorQuery(anns_field="v", metric="L2", vectors=vectors, topk=100)
        [hits] = await service.search(C, [V], plan, query)
        assert sorted(hits.column("id").to_pylist()) == evens
        rows, count = await service.query(C, V, plan, 0, False)
        assert rows is not None and rows.column("id").to_pylist() == evens and count == len(evens)
        assert (await service.query(C, V, plan, 0, True))[1] == len(evens)
        with pytest.raises(StrataError, match="not served by this query node") as refused:  # typed, as over gRPC
            await service.query(C, "elsewhere", plan, 0, True)
        assert refused.value.code == ErrorCode.NOT_READY
        with pytest.raises(InvalidArgument, match="not all of collection"):
            await service.search(C + 1, [V], plan, query)

        # A proxy elsewhere: the plan encoded once, decoded once by the handler.
        wire = encode_read_plan(plan)
        search = qpb.SearchRequest(collection_id=C, vchannel=V, read=wire, anns_field="v", metric_type="L2",
                                   vectors=encode_queries(vectors), topk=100, params="{}")
        resp = await service.Search(search, None)  # type: ignore[arg-type]
        assert sorted(ipc_to_table(resp.results).column("id").to_pylist()) == evens
        answer = await service.Query(qpb.QueryRequest(collection_id=C, vchannel=V, read=wire), None)  # type: ignore[arg-type]
        assert ipc_to_table(answer.results).column("id").to_pylist() == evens

        # Another node's delegator asking this worker for its sealed segment.
        segs = qpb.SearchSegmentsRequest(collection_id=C, segment_ids=[SEALED], read_ts=inserted.timetick, read=wire,
                                         anns_field="v", metric_type="L2", vectors=encode_queries(vectors), topk=100,
                                         params=json.dumps({}))
        resp = await service.SearchSegments(segs, None)  # type: ignore[arg-type]
        assert sorted(ipc_to_table(resp.results).column("id").to_pylist()) == list(range(0, 50, 2))
        rows_req = qpb.QuerySegmentsRequest(collection_id=C, segment_ids=[SEALED], read_ts=inserted.timetick, read=wire)
        answer = await service.QuerySegments(rows_req, None)  # type: ignore[arg-type]
        assert ipc_to_table(answer.results).column("id").to_pylist() == list(range(0, 50, 2))

        assert parses == []
    finally:
        await service.close()


def test_a_plan_survives_the_wire() -> None:
    plan = ReadPlan(guarantee_ts=7, filter=ReadFilter.parse(EVEN, SCHEMA, {"top": 9}), output_fields=("v",),
                    timeout=2.5, partitions=(3, 1), expire_before=5, ignore_growing=True, partition_names={3: "p"})
    decoded = decode_read_plan(encode_read_plan(plan))
    assert decoded == plan  # partition names are the proxy's, for its errors: not sent, not compared
    assert decoded.filter is not None and plan.filter is not None and decoded.filter.cost == plan.filter.cost
    assert decode_read_plan(encode_read_plan(ReadPlan(guarantee_ts=1))) == ReadPlan(guarantee_ts=1)
