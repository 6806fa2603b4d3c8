"""``ProxyParts``: what the RPC mixins of ``MilvusProxy`` share, declared once.

``MilvusProxy`` (``service.py``) is assembled from one mixin per concern (``collection_rpcs.py``,
``read_rpcs.py``, ``write_rpcs.py``, ``aliases.py``, ...). Every mixin inherits this class, which
names the proxy's state and the helper methods the mixins call on one another; the class itself
holds no state and has no ``__init__`` (so it adds nothing to the proxy's construction or MRO
beyond these names). A mixin declares here only what more than one mixin uses; what one mixin
alone needs of another (``LegacyRPCs``' ``Query``, ``BatchDescribeRPCs``' ``DescribeCollection``)
stays declared in that mixin.

This module imports nothing at run time, so any module of ``proxy`` may import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from common.config import ProxyLimits
    from common.coordapi import CoordinatorAPI
    from proxy.auth.rpcs import Security
    from proxy.component import ProxyComponent
    from proxy.metacache import CollectionEntry, MetaCache
    from proxy.reads import ReadRouter
    from proxy.stats import WALStats
    from streamingnode.client.producer import Producer


class ProxyParts:
    """The state and helpers every RPC mixin of ``MilvusProxy`` may use.

    State (``MilvusProxy.__init__`` sets the first six, the composition root attaches the rest):

    - ``_coord``: the coordinator's typed client (``common.coordapi``).
    - ``_cache``: the collection and database metadata cache (``metacache.py``).
    - ``_reads``: routes reads to the query nodes' replicas (``reads.py``).
    - ``_producer``: appends to the streaming nodes' WALs (``streamingnode.client``).
    - ``_stats``: rows appended per collection, as the WAL counts them (``stats.py``).
    - ``_limits``: the proxy's request limits (``common.config.ProxyLimits``).
    - ``_security``: users, roles and grants; ``SecurityRPCs.attach_security`` sets it.
    - ``_component``: the proxy's state; ``HealthRPCs.attach_component`` sets it (None reads as
      initializing).

    The helper methods below raise ``NotImplementedError`` here; the class that provides each
    is named in its docstring.
    """

    _coord: CoordinatorAPI
    _cache: MetaCache
    _reads: ReadRouter
    _producer: Producer
    _stats: WALStats
    _limits: ProxyLimits
    _security: Security
    _component: ProxyComponent | None = None

    async def _fresh_ts(self) -> int:
        """A new timestamp from the coordinator's oracle. ``MilvusProxy`` provides it."""
        raise NotImplementedError

    async def _coll(self, name: str) -> CollectionEntry:
        """The collection ``name`` names, its name checked first (as most Milvus RPCs do).
        ``MilvusProxy`` provides it."""
        raise NotImplementedError

    async def _lookup(self, name: str) -> CollectionEntry:
        """The collection ``name`` names, looked up unchecked (as Milvus' Search, HybridSearch and
        statistics do: a bad name is a missing collection there). ``MilvusProxy`` provides it."""
        raise NotImplementedError

    async def _job_rows(self, coll: CollectionEntry) -> int:
        """Rows that imports added and compactions removed in ``coll`` (added to the WAL's count
        for the collection's statistics). ``JobRPCs`` provides it."""
        raise NotImplementedError
