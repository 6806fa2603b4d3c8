"""``strata standalone-node``: the streaming node, the query node and the proxy in one process.

What ``strata standalone`` runs next to its coordinator (Milvus standalone is
one process too). Each role keeps its own gRPC server and etcd session, so the
coordinator assigns pchannels and places channels exactly as in a cluster. The
proxy reaches both neighbours without gRPC: reads go to the query node's
servicer (``proxy/localnode.py``) and appends to the streaming node's
WALs (``streamingnode/client/local.py``). A pchannel appended to locally saves
the encoding and decoding of the request and two loopback hops per insert
batch; the cost is that the three roles share one interpreter lock, which
matters little because the WAL's fsync and the HNSW walks release it.
"""

from __future__ import annotations

from common.config import QueryNodeConfig, StreamingNodeConfig
from launch.colocated import QueryNodeWithProxy
from proxy.console import ProxyConsole
from streamingnode.client.local import LocalStreamingNode
from streamingnode.server import StreamingNode


class StandaloneNode:
    def __init__(self, streaming: StreamingNodeConfig, query: QueryNodeConfig) -> None:
        if query.proxy_port is None:
            raise ValueError("the standalone node serves the proxy: querynode.proxy_port is required")
        self._streaming = StreamingNode(streaming)
        self._query_config = query
        self._query: QueryNodeWithProxy | None = None
        self.local: LocalStreamingNode | None = None  # the proxy's way to the WALs, once started
        self.address = ""

    async def start(self) -> None:
        # The streaming node first: the proxy's producer needs its WALs and its address.
        await self._streaming.start()
        assert self._streaming.manager is not None
        self.local = LocalStreamingNode(self._streaming.address, self._streaming.manager)
        self._query = QueryNodeWithProxy(self._query_config, local_wal=self.local)
        await self._query.start()
        self.address = f"{self._query_config.common.host}:{self._query_config.proxy_port}"

    def console_source(self) -> ProxyConsole | None:
        """The web console's views of the proxy (None until it serves)."""
        return self._query.console_source() if self._query is not None else None

    async def health_reasons(self) -> list[str]:
        """The streaming node's reasons, then the query node's and the proxy's."""
        reasons = await self._streaming.health_reasons()
        return reasons + (await self._query.health_reasons() if self._query is not None else ["querynode not started"])

    async def stop(self) -> None:
        # The query node stops its proxy first, so no append reaches a closing WAL from here.
        if self._query is not None:
            await self._query.stop()
        await self._streaming.stop()
