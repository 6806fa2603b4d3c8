"""A query node with a proxy in the same process (``querynode.proxy_port``).

The proxy reads through the query node's servicer without gRPC
(``proxy/localnode.py``) and, in the standalone node, appends through the
streaming node of the process (``local_wal``); without one it reaches the
streaming nodes over gRPC as any proxy does. The query node starts first and
the proxy last, so the proxy never serves a read the node cannot take; the
proxy stops first.
"""

from __future__ import annotations

from dataclasses import replace

from common.config import ProxyConfig, QueryNodeConfig
from proxy.console import ProxyConsole
from proxy.nodereads import LocalNode
from proxy.server import Proxy
from querynode.server import QueryNode
from streamingnode.client.local import LocalStreamingNode


class QueryNodeWithProxy:
    def __init__(self, config: QueryNodeConfig, local_wal: LocalStreamingNode | None = None) -> None:
        self.config = config
        self._node = QueryNode(config)
        self._local_wal = local_wal
        self._proxy: Proxy | None = None

    @property
    def address(self) -> str:
        """The query node's gRPC address."""
        return self._node.address

    async def start(self) -> None:
        await self._node.start()
        c = self.config
        if c.proxy_port is None:
            return
        self._proxy = Proxy(
            ProxyConfig(common=replace(c.common, port=c.proxy_port), limits=c.proxy_limits, http=c.proxy_http),
            LocalNode(self._node.address, self._node.service),
            self._local_wal,
        )
        await self._proxy.start()

    def console_source(self) -> ProxyConsole | None:
        """The web console's views of the proxy (None while it does not serve, or without one)."""
        return self._proxy.console_source() if self._proxy is not None else None

    async def health_reasons(self) -> list[str]:
        """The query node's reasons, then its proxy's (which include the whole cluster's)."""
        reasons = await self._node.health_reasons()
        if self.config.proxy_port is not None:
            reasons += await self._proxy.health_reasons() if self._proxy is not None else ["proxy not started"]
        return reasons

    async def stop(self) -> None:
        if self._proxy is not None:
            await self._proxy.stop()
        await self._node.stop()
