"""Scatter reads to the delegator of every vchannel and gather their answers."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from protos import coordinator_pb2, querynode_pb2, querynode_pb2_grpc
from services.arrowio import ipc_to_table, table_to_ipc
from services.coordclient import CoordinatorClient
from services.errors import ErrorCode, StrataError
from services.grpcutil import StubCache, raise_for_status
from services.proxy.metacache import CollectionEntry


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadOptions:
    guarantee_ts: int
    filter: str
    filter_params: dict[str, Any]
    output_fields: list[str]
    timeout: float

    def to_proto(self) -> querynode_pb2.ReadOptions:
        return querynode_pb2.ReadOptions(
            guarantee_timestamp=self.guarantee_ts,
            filter=self.filter,
            filter_params=json.dumps(self.filter_params) if self.filter_params else "",
            output_fields=self.output_fields,
            timeout_ms=int(self.timeout * 1000),
        )


LOADING_POLL_SECONDS = 0.1


class ReadRouter:
    def __init__(self, coord: CoordinatorClient) -> None:
        self._coord = coord
        self._stubs = StubCache(querynode_pb2_grpc.QueryNodeStub)
        self._stub = self._stubs.get

    async def load_view(self, coll: CollectionEntry) -> coordinator_pb2.QueryViewResponse:
        stub = await self._coord.stub()
        resp = await stub.GetQueryView(coordinator_pb2.CollectionRef(collection_id=coll.collection_id), timeout=30)
        raise_for_status(resp.status)
        return resp

    async def _placements(self, coll: CollectionEntry, timeout: float) -> list[coordinator_pb2.ChannelPlacement]:
        """Where each vchannel is served, waiting (up to ``timeout``) while the collection is loading.

        A loaded collection is still *loading* right after a restart or a node loss, while its
        delegators catch up with the WAL; reads wait for that instead of failing.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            view = await self.load_view(coll)
            if view.state == coordinator_pb2.LOAD_STATE_NOT_LOAD:
                raise StrataError(f"collection not loaded[collection={coll.name}]", ErrorCode.COLLECTION_NOT_LOADED)
            if view.state == coordinator_pb2.LOAD_STATE_LOADED and all(c.address for c in view.channels):
                return list(view.channels)
            if loop.time() >= deadline:
                waiting = [c.vchannel for c in view.channels if not c.ready]
                raise StrataError(
                    f"collection {coll.name} is still loading ({view.progress}%): "
                    f"{', '.join(waiting)} not ready",
                    ErrorCode.NOT_READY,
                )
            await asyncio.sleep(LOADING_POLL_SECONDS)

    async def search(
        self,
        coll: CollectionEntry,
        *,
        read: ReadOptions,
        anns_field: str,
        metric: str,
        vectors: np.ndarray,
        topk: int,
        params: dict[str, Any],
    ) -> list[pa.Table]:
        placements = await self._placements(coll, read.timeout)
        vec = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), vectors.shape[1])
        payload = table_to_ipc(pa.table({"vector": vec}))
        reqs = [
            querynode_pb2.SearchRequest(
                collection_id=coll.collection_id,
                vchannel=p.vchannel,
                read=read.to_proto(),
                anns_field=anns_field,
                metric_type=metric,
                vectors=payload,
                topk=topk,
                params=json.dumps(params),
            )
            for p in placements
        ]
        resps = await asyncio.gather(
            *(self._stub(p.address).Search(r, timeout=read.timeout + 5) for p, r in zip(placements, reqs, strict=True))
        )
        out = []
        for resp in resps:
            raise_for_status(resp.status)
            out.append(ipc_to_table(resp.results))
        return out

    async def query(
        self, coll: CollectionEntry, *, read: ReadOptions, limit: int, count_only: bool
    ) -> tuple[list[pa.Table], int]:
        placements = await self._placements(coll, read.timeout)
        resps = await asyncio.gather(
            *(
                self._stub(p.address).Query(
                    querynode_pb2.QueryRequest(
                        collection_id=coll.collection_id,
                        vchannel=p.vchannel,
                        read=read.to_proto(),
                        limit=limit,
                        count_only=count_only,
                    ),
                    timeout=read.timeout + 5,
                )
                for p in placements
            )
        )
        tables, total = [], 0
        for resp in resps:
            raise_for_status(resp.status)
            total += resp.count
            if resp.results:
                tables.append(ipc_to_table(resp.results))
        return tables, total

    async def close(self) -> None:
        await self._stubs.close()
