"""The proxy's in-process query node raises a refused read as a checked gRPC stub does, and hands
the servicer the read plan and the query as they are."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from common.errors import ErrorCode, ReadTimeout
from common.readplan import ReadPlan, VectorQuery
from proxy.localnode import LocalQueryNode

PLAN = ReadPlan(guarantee_ts=1)


class Servicer:
    """The in-process read methods of ``QueryNodeService``, answering as a delegator would."""

    def __init__(self) -> None:
        self.searched: list[tuple[ReadPlan, VectorQuery]] = []

    async def search_vchannels(self, vchannels: list[str], plan: ReadPlan, query: VectorQuery) -> pa.Table:
        self.searched.append((plan, query))
        return pa.table({"query": pa.array([0], pa.int32())})

    async def query_vchannel(
        self, vchannel: str, plan: ReadPlan, *, limit: int | None, count_only: bool
    ) -> tuple[pa.Table | None, int]:
        if vchannel == "frozen":
            raise ReadTimeout("query frozen: data is not yet readable at the requested consistency")
        return None, 3


async def test_a_refused_local_query_raises_its_typed_error() -> None:
    node = LocalQueryNode("127.0.0.1:1", Servicer())
    with pytest.raises(ReadTimeout, match="not yet readable") as info:
        await node.query(1, "frozen", PLAN, 0, True)
    assert info.value.code == ErrorCode.TIMEOUT


async def test_an_answered_local_query_returns_the_answer() -> None:
    node = LocalQueryNode("127.0.0.1:1", Servicer())
    assert (await node.query(1, "v0", PLAN, 0, True)) == (None, 3)


async def test_a_local_search_gets_the_plan_itself_and_float32_rows() -> None:
    servicer = Servicer()
    node = LocalQueryNode("127.0.0.1:1", servicer)
    vectors = np.array([[1.0, 2.0]], np.float16)  # a FLOAT16 field's queries, as the proxy decodes them
    query = VectorQuery(anns_field="v", metric="L2", vectors=vectors, topk=3)
    await node.search(1, ["v0"], PLAN, query)
    [(plan, sent)] = servicer.searched
    assert plan is PLAN
    assert sent.vectors.dtype == np.float32 and sent.vectors.tolist() == [[1.0, 2.0]]
