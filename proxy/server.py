"""Composition root of the proxy."""

from __future__ import annotations

import grpc
import structlog
from pymilvus.grpc_gen import milvus_pb2, milvus_pb2_grpc

from common.config import ProxyConfig
from common.coordapi import RemoteCoordinator
from common.coordclient import CoordinatorClient
from common.etcd.metastore import MetaStore
from common.etcd.session import Session
from common.grpcutil import Health, message_size_options, start_server
from proxy.access import AccessInterceptor
from proxy.auth.authenticator import Authenticator
from proxy.auth.interceptor import AuthInterceptor
from proxy.auth.resolve import collection_resolver
from proxy.auth.rpcs import Security
from proxy.auth.state import SecurityStateCache
from proxy.auth.tls import http_ssl_context, server_credentials
from proxy.component import ProxyComponent
from proxy.console import ProxyConsole
from proxy.http.invoke import Gate
from proxy.http.server import HttpServer
from proxy.metacache import MetaCache
from proxy.metrics import DISTRIBUTED, STANDALONE, Deployment
from proxy.nodereads import LocalNode
from proxy.reads import ReadRouter
from proxy.service import SERVER_VERSION, MilvusProxy
from proxy.slow_requests import SlowRequests
from proxy.stats import WALStats
from streamingnode.client.assignment import DiscoverWatcher
from streamingnode.client.local import LocalStreamingNode
from streamingnode.client.producer import Producer

ROLE = "proxy"
# Health-check name (grpc.health.v1) besides the whole server: SERVING once the session is registered.
MILVUS_SERVICE = milvus_pb2.DESCRIPTOR.services_by_name["MilvusService"].full_name


class Proxy:
    def __init__(
        self,
        config: ProxyConfig,
        local: LocalNode | None = None,
        local_wal: LocalStreamingNode | None = None,
    ) -> None:
        """``local``: the query node of this process (standalone), read from without gRPC;
        ``local_wal``: its streaming node, appended to without gRPC."""
        config.validate()
        self.config = config
        self._local = local
        self._local_wal = local_wal
        self.address = ""
        self._health = Health([MILVUS_SERVICE])
        self.component = ProxyComponent()  # GetComponentStates / CheckHealth report it
        self._http: HttpServer | None = None
        self._slow = SlowRequests(threshold_ms=config.limits.slow_request_ms)
        self._console: ProxyConsole | None = None
        self._log = structlog.get_logger().bind(component="proxy")

    async def start(self) -> None:
        c = self.config
        self._store = await MetaStore.connect(c.common.etcd, c.common.etcd_root)
        self._coord = CoordinatorClient(self._store)
        self._watcher = DiscoverWatcher(self._coord)
        await self._watcher.start()
        self._producer = Producer(self._watcher, self._local_wal)
        coordinator = RemoteCoordinator(self._coord)
        self._reads = ReadRouter(coordinator, self._local)
        self._stats = WALStats(self._watcher)
        self._cache = MetaCache(coordinator)
        self._cache.start(self._store)
        service = MilvusProxy(coordinator, self._producer, self._cache, self._reads, self._stats, limits=c.limits)
        service.attach_component(self.component)
        self._service = service
        # Users, roles and grants: served always; checked on every call with authorizationEnabled.
        security = c.common.security
        self._states = SecurityStateCache(self._store)
        await self._states.start()
        self._authenticator = authenticator = Authenticator(self._states)
        service.attach_security(
            Security(self._coord, self._states, authenticator, super_users=security.super_user_names())
        )
        resolve = collection_resolver(self._cache)
        interceptor = AuthInterceptor(authenticator, self._states, resolve)
        # The access log is outermost, so it also sees the calls authentication refuses.
        interceptors: list[grpc.aio.ServerInterceptor] = [
            AccessInterceptor(self.component, self._slow, lines=c.limits.access_log)
        ]
        if security.authorization_enabled:
            interceptors.append(interceptor)
        # Milvus's deploy modes: the proxy of ``strata standalone`` shares its process with the WAL.
        mode = STANDALONE if self._local_wal is not None else DISTRIBUTED

        def add(server: grpc.aio.Server) -> None:
            milvus_pb2_grpc.add_MilvusServiceServicer_to_server(service, server)

        sizes = message_size_options(max_receive=c.limits.server_max_recv_size, max_send=c.limits.server_max_send_size)
        self._server, port = await start_server(
            add,
            host=c.common.host,
            port=c.common.port,
            health=self._health,
            options=sizes,
            interceptors=interceptors,
            credentials=server_credentials(security),
            internal=False,  # the clients' port: common.security.tlsMode, not internal TLS
        )
        self._log.info("proxy serving", address=f"{c.common.host}:{port}", tls_mode=security.tls_mode,
                       authorization=security.authorization_enabled)
        self.address = f"{c.common.host}:{port}"
        service.attach_deployment(Deployment(mode=mode, version=SERVER_VERSION, address=self.address))
        # The RESTful API: the same handlers, checks and gate as the gRPC port (proxy/http/).
        if c.http.enabled:
            gate = Gate(authenticator, interceptor) if security.authorization_enabled else None
            self._http = HttpServer(service, gate, host=c.common.host, port=c.http.port,
                                    max_body=c.limits.server_max_recv_size, ssl_context=http_ssl_context(security),
                                    slow=self._slow, node_id=lambda: self.component.node_id,
                                    access_lines=c.limits.access_log)
            await self._http.start()
        self._session = Session(
            self._store,
            ROLE,
            self.address,
            ttl_seconds=c.common.session_ttl_seconds,
            on_registered=lambda info: self.component.registered(info.server_id),  # again after a lost lease
        )
        await self._session.start()
        self._console = ProxyConsole(self._coord, self._slow)
        service.attach_cluster_views(self._console)  # GetMetrics system_info: the whole cluster
        await self._health.serving()

    def console_source(self) -> ProxyConsole | None:
        """The web console's views (``console.py``); None until the proxy serves."""
        return self._console

    async def health_reasons(self) -> list[str]:
        """Why this proxy cannot serve the Milvus API now (empty: it can): what ``CheckHealth`` answers,
        that is this proxy's own state and then every node the coordinator checks."""
        service: MilvusProxy | None = getattr(self, "_service", None)
        if service is None:
            return ["proxy not started"]
        session: Session | None = getattr(self, "_session", None)
        if session is not None and not session.alive:
            return ["proxy etcd session lost (lease expired or etcd unreachable)"]
        answer = await service.CheckHealth(milvus_pb2.CheckHealthRequest(), None)
        if answer.isHealthy:
            return []
        return list(answer.reasons) or [answer.status.reason or "proxy not healthy"]

    async def stop(self) -> None:
        self._console = None
        self.component.stopping()
        await self._health.stopping()
        await self._session.stop()
        if self._http is not None:
            await self._http.stop()
        await self._server.stop(grace=2)
        await self._cache.stop()
        await self._states.stop()
        self._authenticator.close()
        await self._reads.close()
        await self._stats.close()
        await self._producer.close()
        await self._watcher.stop()
        await self._coord.close()
        await self._store.close()
