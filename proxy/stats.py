"""Row counts for ``get_collection_stats``, from the WAL owners.

Milvus semantics: the count of inserted rows; deleted rows are only subtracted
once compaction has removed them (the proxy adds the coordinator's row delta:
imported rows, minus the rows compactions dropped), so use ``count(*)`` for
the exact number of live entities.
"""

from __future__ import annotations

import asyncio

from common.grpcutil import StubCache
from protos import streaming_pb2, streaming_pb2_grpc
from proxy.metacache import CollectionEntry
from streamingnode.client.assignment import AssignmentSource


class WALStats:
    def __init__(self, source: AssignmentSource) -> None:
        self._source = source
        self._stubs = StubCache(streaming_pb2_grpc.StreamingNodeHandlerStub)

    async def collection_rows(self, coll: CollectionEntry) -> int:
        async def one(pchannel: str) -> int:
            address, term = await self._source.resolve(pchannel)
            resp = await self._stubs.get(address).GetCollectionRows(
                streaming_pb2.GetCollectionRowsRequest(pchannel=pchannel, term=term, collection_id=coll.collection_id),
                timeout=30,
            )
            return int(resp.rows)

        return sum(await asyncio.gather(*(one(p) for p in sorted(set(coll.pchannels)))))

    async def close(self) -> None:
        await self._stubs.close()
