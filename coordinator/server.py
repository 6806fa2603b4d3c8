"""Composition root of the coordinator.

Coordinators run active/standby (``coordinator.election``): ``start()`` first
starts the gRPC server with only the health service, then campaigns for the
leader key ``<root>/session/coordinator``; a standby blocks there and serves
nothing but health checks. Once elected it starts the TSO, ids, catalog,
balancer and query coordinator (each reloads its state from etcd, so a new
leader continues where the old one stopped), serves the coordinator service,
publishes its address in the leader key and registers its ``coordinator`` session.

Health (``grpc.health.v1``): the whole server (``""``) is SERVING from the
moment the standby campaigns (it is alive and ready to take over: liveness and
readiness probes pass on a standby), and ``strata.coordinator.Coordinator`` is
SERVING only on the active coordinator (``strata health ADDRESS --service
strata.coordinator.Coordinator`` tells which one leads).

The election lease TTL is ``common.session_ttl_seconds`` (default 15 s; also
``STRATA_COMMON_SESSION_TTL_SECONDS``). It bounds failover: a standby takes
over at most one TTL after the active coordinator died.

Every metadata write of an active coordinator is conditional on the leader
key it created (``MetaStore.guarded``): a coordinator frozen past its lease,
while a standby took over, has its first write refused and exits, so it never
overwrites the new leader's state.

Losing the lease (etcd unreachable for about a TTL) makes the active
coordinator exit the process with status 3, as Milvus does, instead of
stopping its components: a graceful stop needs etcd, which is gone, and may
hang while a new leader already serves. The supervisor restarts the process,
which comes back as a standby. Tests may pass ``on_leadership_lost``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator

import structlog

from common.config import CoordinatorConfig
from common.coordclient import COORDINATOR_ROLE, LEADER_KEY, LeaderInfo, read_leader
from common.etcd.metastore import MetaStore
from common.etcd.session import Session, allocate_server_id
from common.grpcutil import OVERALL, Health, LateServicers, start_server
from common.readiness import role_reasons
from common.statemetrics import GaugeSample, StateMetrics
from common.storage.objectstore import ObjectStore
from common.tasks import BackgroundTasks
from coordinator.aliases import AliasDDL
from coordinator.catalog import Catalog
from coordinator.console import CoordinatorConsole
from coordinator.console_service import ConsoleService
from coordinator.credentials import Credentials
from coordinator.data.build_client import GrpcIndexBuilder
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.gc import GarbageCollector
from coordinator.data.index_builds import IndexBuildScheduler
from coordinator.data.offline import OfflineJobs
from coordinator.databases import Databases
from coordinator.ddl import DDL
from coordinator.election import Election
from coordinator.idalloc import IDAllocator
from coordinator.indexes import IndexDDL
from coordinator.metrics import coordinator_samples
from coordinator.partitions import PartitionDDL
from coordinator.query.coord import QueryCoordinator
from coordinator.schema_ddl import SchemaDDL
from coordinator.security_service import SecurityService
from coordinator.service import CoordinatorService
from coordinator.streaming.balancer import StreamingBalancer
from coordinator.streaming.local_source import BalancerAssignmentSource
from coordinator.truncate import Truncator
from coordinator.tso import TimestampOracle
from protos import console_pb2_grpc, coordinator_pb2, coordinator_pb2_grpc, security_pb2_grpc
from streamingnode.client.producer import Producer


def pchannel_names(cluster: str, count: int) -> list[str]:
    return [f"{cluster}-dml_{i}" for i in range(count)]


LEADERSHIP_LOST_EXIT_STATUS = 3
# The health-check name that is SERVING only on the active coordinator.
COORDINATOR_SERVICE = coordinator_pb2.DESCRIPTOR.services_by_name["Coordinator"].full_name


def _exit_on_leadership_lost() -> None:
    # No cleanup on purpose: every further action could race the new leader (see module doc).
    structlog.get_logger().bind(component="coordinator").critical("coordinator lost leadership, exiting")
    os._exit(LEADERSHIP_LOST_EXIT_STATUS)


class StandbyStopped(SystemExit):
    """A standby was asked to stop (SIGINT/SIGTERM) before it was elected: the process exits 0."""

    def __init__(self) -> None:
        super().__init__(0)


class Coordinator:
    def __init__(self, config: CoordinatorConfig, *, on_leadership_lost: Callable[[], None] | None = None) -> None:
        config.validate()
        self.config = config
        self.address = ""
        self._on_leadership_lost = on_leadership_lost or _exit_on_leadership_lost
        self._log = structlog.get_logger().bind(component="coordinator")
        self._tasks = BackgroundTasks("coordinator")
        self._state_metrics = StateMetrics(self._state_samples)
        self._console: CoordinatorConsole | None = None

    def _state_samples(self) -> Iterator[GaugeSample]:
        health: Health | None = getattr(self, "_health", None)
        leading = health is not None and health.is_serving(COORDINATOR_SERVICE)
        return coordinator_samples(getattr(self, "data", None) if leading else None, leading=leading)

    def console_source(self) -> CoordinatorConsole | None:
        """The web console's views (``coordinator/console.py``); None until this coordinator leads."""
        return self._console

    async def start(self) -> None:
        """Campaign (a standby blocks here), then start every component and serve.

        SIGINT/SIGTERM while standing by make the process exit 0 (``StandbyStopped``).
        """
        c = self.config
        self._state_metrics.start()
        self._store = await MetaStore.connect(c.common.etcd, c.common.etcd_root)
        server_id = await allocate_server_id(self._store)
        self._election = Election(
            self._store, ttl_seconds=c.common.session_ttl_seconds, on_lost=self._on_leadership_lost
        )
        # The server answers health checks while standing by; the coordinator service joins it once elected.
        self._health = Health([COORDINATOR_SERVICE])
        self._late = LateServicers()
        late = self._late
        self._server, port = await start_server(
            lambda server: server.add_generic_rpc_handlers((late,)),
            host=c.common.host,
            port=c.common.port,
            health=self._health,
        )
        self.address = f"{c.common.host}:{port}"
        await self._health.serving(OVERALL)
        try:
            await self._campaign(LeaderInfo(server_id=server_id))
        except BaseException:  # StandbyStopped, a cancelled start(), etcd errors: clean up, re-raise
            self._state_metrics.stop()
            await self._health.stopping()
            await self._server.stop(grace=None)
            await self._election.resign()
            await self._store.close()
            raise
        self._log.info("coordinator active", server_id=server_id)
        # Every metadata write of the leader's components is fenced by the leader key: if this
        # process froze past its lease and another coordinator won, the write is refused.
        meta = self._store.guarded(LEADER_KEY, self._election.create_revision, on_refused=self._on_leadership_lost)
        self.tso = TimestampOracle(meta)
        await self.tso.start()
        self.ids = IDAllocator(meta)
        await self.ids.start()
        self.catalog = Catalog(meta)
        self.databases = Databases(meta, allocate_id=self.ids.allocate)
        await self.databases.start()
        # Users, roles and grants; root and the built-in roles on the cluster's first start.
        self.credentials = Credentials(meta, default_root_password=c.common.security.root_password())
        await self.credentials.start()
        names = pchannel_names(c.cluster_name, c.pchannel_count)
        self.balancer = StreamingBalancer(meta, names, rebalance_cooldown_seconds=c.rebalance_cooldown_seconds)
        self._producer = Producer(BalancerAssignmentSource(self.balancer))
        self.data = DataCoordinator(meta, self.catalog, self.tso, self._producer)
        await self.data.start()
        self.query = QueryCoordinator(meta, self.catalog, self.tso, self.data)
        self.ddl = DDL(
            self.catalog, self.ids, self.tso, self._producer, names, self.query.release, self.data, self.databases
        )
        self.schema_ddl = SchemaDDL(self.ddl, self.catalog, self.tso, self._producer)
        # Compaction and bulk import on Spark need the object storage the segments live in.
        storage = None if c.storage is None else await asyncio.to_thread(ObjectStore.from_uri, c.storage)
        self.jobs = None if c.storage is None else OfflineJobs(
            meta, self.data, self.catalog, self.ids, self.tso, storage_uri=c.storage, config=c.jobs,
            loading=self.query.loading,
        )
        # Index builds of flushed segments, loaded or not (as Milvus' index coordinator), on query nodes;
        # started below, once the query coordinator runs.
        self._index_builder = GrpcIndexBuilder()
        self._index_builds: IndexBuildScheduler | None = None
        if storage is not None:
            self._index_builds = IndexBuildScheduler(self.data, self.catalog, storage, self.query, self._index_builder)
        service = CoordinatorService(
            tso=self.tso,
            ids=self.ids,
            catalog=self.catalog,
            ddl=self.ddl,
            balancer=self.balancer,
            query=self.query,
            data=self.data,
            aliases=AliasDDL(self.catalog, self.ddl.lock),
            truncator=Truncator(self.ddl, self.catalog, self.ids, self.tso, self.query),
            indexes=IndexDDL(self.catalog, self.ids, self.ddl.lock, self.query.is_loaded),
            databases=self.databases,
            schema=self.schema_ddl,
            partitions=PartitionDDL(
                self.catalog,
                self.ids,
                self.tso,
                self._producer,
                self.data,
                self.ddl.lock,
                self.query.is_partition_loaded,
            ),
            compaction=None if self.jobs is None else self.jobs.compaction,
            imports=None if self.jobs is None else self.jobs.imports,
            storage=storage,
            build_failures=None if self._index_builds is None else self._index_builds.failures,
            credentials=self.credentials,
        )

        self._late.add(lambda server: coordinator_pb2_grpc.add_CoordinatorServicer_to_server(service, server))
        security = SecurityService(self.credentials)
        self._late.add(lambda server: security_pb2_grpc.add_SecurityServicer_to_server(security, server))
        # The web console's views: on this process's operations port, and to proxies over gRPC.
        console = CoordinatorConsole(store=self._store, catalog=self.catalog, databases=self.databases,
                                     balancer=self.balancer, data=self.data, query=self.query)
        self._late.add(lambda server: console_pb2_grpc.add_ConsoleServicer_to_server(ConsoleService(console), server))
        # Other roles find us through the leader key; streaming nodes need us for timestamps
        # before they can open a WAL, so publish the address before balancing.
        await self._election.proclaim(LeaderInfo(server_id=server_id, address=self.address))
        self._session = Session(self._store, COORDINATOR_ROLE, self.address, ttl_seconds=c.common.session_ttl_seconds)
        await self._session.start(server_id=server_id)
        await self.balancer.start()
        await self.query.start()
        if self.jobs is not None:
            await self.jobs.start()
        if self._index_builds is not None:
            self._index_builds.start()
        self._gc: GarbageCollector | None = None
        if storage is not None:
            self._gc = GarbageCollector(
                self.data, storage, retention_seconds=c.gc_retention_seconds, interval_seconds=c.gc_interval_seconds
            )
            self._gc.start()
        else:
            self._log.warning("no object storage configured: files of dropped segments are never removed")
        self._tasks.start(self._recover(), name="ddl-recovery")
        self._console = console
        await self._health.serving(COORDINATOR_SERVICE)

    async def _campaign(self, info: LeaderInfo) -> None:
        loop = asyncio.get_running_loop()
        holder = await read_leader(self._store)
        if holder is not None:
            self._log.info("coordinator standby", server_id=info.server_id, leader=holder.server_id)
        campaign = asyncio.ensure_future(self._election.campaign(info))
        # ``run_until_signalled`` only watches for SIGINT/SIGTERM after start() returns, and a
        # standby may block here for ever: while campaigning, a signal stops the campaign.
        # asyncio has no public getter for a signal's handler, so the role's own handlers are
        # saved from the loop's private table and put back once elected.
        handlers: dict[int, object] | None = getattr(loop, "_signal_handlers", None)
        saved = {sig: handlers[sig] for sig in (signal.SIGINT, signal.SIGTERM) if sig in handlers} if handlers else {}
        signalled = False

        def on_signal() -> None:
            nonlocal signalled
            signalled = True
            campaign.cancel()

        if handlers is not None:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, on_signal)
        try:
            await campaign
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if signalled and (task is None or task.cancelling() == 0):
                self._log.info("coordinator standby stopped")
                raise StandbyStopped() from None
            raise
        finally:
            if handlers is not None:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    if sig in saved:
                        handlers[sig] = saved[sig]
                    else:
                        loop.remove_signal_handler(sig)

    async def _recover(self) -> None:
        # Finishing half-done DDL needs streaming nodes, which may come up after us: retry.
        log = structlog.get_logger().bind(component="coordinator")
        while True:
            try:
                await self.ddl.recover()
                await self.schema_ddl.recover()
                return
            except asyncio.CancelledError:
                raise
            except Exception as err:  # task boundary
                log.warning("ddl recovery failed, retrying", error=str(err))
                await asyncio.sleep(1)

    async def health_reasons(self) -> list[str]:
        """Why this coordinator cannot lead or take over now (empty: it can); a standby is healthy, as its
        whole-server health status says, and a leader's session must be alive."""
        health: Health | None = getattr(self, "_health", None)
        return role_reasons(COORDINATOR_ROLE, health, getattr(self, "_session", None))

    async def stop(self) -> None:
        self._state_metrics.stop()
        await self._health.stopping()
        if self._gc is not None:
            await self._gc.stop()
        if self._index_builds is not None:
            await self._index_builds.stop()
        await self._index_builder.close()
        if self.jobs is not None:
            await self.jobs.stop()
        await self._tasks.stop()
        await self.query.stop()
        await self.balancer.stop()
        await self._producer.close()
        # Stop serving before resigning, so two coordinators never serve at once.
        await self._server.stop(grace=1)
        await self._session.stop()
        await self._election.resign()
        await self._store.close()
