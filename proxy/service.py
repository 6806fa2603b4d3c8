"""``MilvusService``: the pymilvus-facing front door.

Each RPC validates, converts protobuf at this edge (``convert/``), and calls the
coordinator, the streaming nodes (writes) or the delegators (reads). Errors
become Milvus statuses; nothing the client sends can crash the server.
RPCs not implemented here answer a NOT_SUPPORTED Milvus status (``unsupported.py``).
"""

from __future__ import annotations

import grpc
from pymilvus.grpc_gen import common_pb2, milvus_pb2, milvus_pb2_grpc

from common.config import DEFAULT_LIMITS, ProxyLimits
from common.coordapi import CoordinatorAPI
from common.errors import StrataError
from common.names import check_collection_name
from proxy.aliases import AliasRPCs
from proxy.analyzers import AnalyzerRPCs
from proxy.auth.backup_rpcs import RBACBackupRPCs
from proxy.auth.rpcs import SecurityRPCs
from proxy.batch_describe import BatchDescribeRPCs
from proxy.collection_rpcs import CollectionRPCs
from proxy.databases import DatabaseRPCs
from proxy.dbcontext import request_database
from proxy.flush_all import FlushAllRPCs
from proxy.health import HealthRPCs
from proxy.indexes import IndexRPCs
from proxy.jobs import JobRPCs
from proxy.legacy import LegacyRPCs
from proxy.metacache import CollectionEntry, MetaCache
from proxy.metrics import MetricsRPCs
from proxy.partitions import PartitionRPCs
from proxy.read_rpcs import ReadRPCs
from proxy.reads import ReadRouter
from proxy.replicas import ReplicaRPCs
from proxy.resource_groups import ResourceGroupRPCs
from proxy.rpc import milvus_rpc
from proxy.schema_rpcs import SchemaRPCs
from proxy.segments import SegmentRPCs
from proxy.stats import WALStats
from proxy.status import milvus_status, success
from proxy.unsupported import answer_unsupported
from proxy.write_rpcs import WriteRPCs
from streamingnode.client.producer import Producer

SERVER_VERSION = "v2.6.0-strata"


@answer_unsupported
class MilvusProxy(
    SchemaRPCs,
    PartitionRPCs,
    AliasRPCs,
    JobRPCs,
    IndexRPCs,
    DatabaseRPCs,
    ReplicaRPCs,
    HealthRPCs,
    SegmentRPCs,
    FlushAllRPCs,
    BatchDescribeRPCs,
    ResourceGroupRPCs,
    MetricsRPCs,
    LegacyRPCs,
    SecurityRPCs,
    RBACBackupRPCs,
    AnalyzerRPCs,
    CollectionRPCs,
    WriteRPCs,
    ReadRPCs,
    milvus_pb2_grpc.MilvusServiceServicer,
):
    def __init__(
        self,
        coord: CoordinatorAPI,
        producer: Producer,
        cache: MetaCache,
        reads: ReadRouter,
        stats: WALStats,
        *,
        limits: ProxyLimits = DEFAULT_LIMITS,
    ) -> None:
        self._coord = coord
        self._producer = producer
        self._cache = cache
        self._reads = reads
        self._stats = stats
        self._limits = limits

    # ---- helpers (declared for the mixins in ProxyParts) -----------------------------------------
    async def _fresh_ts(self) -> int:
        return await self._coord.alloc_timestamp()

    async def _coll(self, name: str) -> CollectionEntry:
        """The collection ``name`` names, its name checked first (as most Milvus RPCs do)."""
        check_collection_name(name)
        return await self._cache.get(name)

    async def _lookup(self, name: str) -> CollectionEntry:
        """The collection ``name`` names, looked up unchecked (as Milvus' Search, HybridSearch and
        statistics do: a bad name is a missing collection there)."""
        return await self._cache.get(name)

    # ---- connection ----------------------------------------------------------------------------
    async def Connect(self, request: milvus_pb2.ConnectRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.ConnectResponse:
        try:  # as Milvus: a client whose ``dbname`` names no database cannot connect
            await self._cache.database(request_database(request, context))
        except StrataError as err:
            return milvus_pb2.ConnectResponse(status=milvus_status(err))
        identifier = await self._fresh_ts()
        return milvus_pb2.ConnectResponse(
            status=success(),
            server_info=common_pb2.ServerInfo(build_tags=SERVER_VERSION, deploy_mode="STANDALONE"),
            identifier=identifier,
        )

    async def GetVersion(self, request: milvus_pb2.GetVersionRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.GetVersionResponse:
        return milvus_pb2.GetVersionResponse(status=success(), version=SERVER_VERSION)

    @milvus_rpc(milvus_pb2.AllocTimestampResponse)
    async def AllocTimestamp(self, request: milvus_pb2.AllocTimestampRequest, context: grpc.aio.ServicerContext) -> milvus_pb2.AllocTimestampResponse:
        return milvus_pb2.AllocTimestampResponse(status=success(), timestamp=await self._fresh_ts())

    # ---- collections ---------------------------------------------------------------------------
