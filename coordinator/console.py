"""The web console's cluster views, built from the active coordinator's own state (``common/webui/``).

- ``cluster``: every etcd session (role, server id, address; the leader marked),
  and every pchannel with the streaming node serving it and its term (or none);
- ``collections``: per database, its collections with their schema, load state
  (replicas, loading progress), segments counted by state and level, and rows
  (of the segments the catalog lists, not yet dropped; growing ones count the
  rows flushed so far);
- ``querynodes``: the live query nodes with the delegators and sealed segments
  each holds (count and rows), and the replicas of every loaded collection;
- ``jobs``: compaction and import jobs, running first, then the most recent.

Reads only: each view is a snapshot of in-memory state plus two etcd scans
(sessions and databases), cheap enough for a page that refreshes every few seconds.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from common.coordclient import COORDINATOR_ROLE, LEADER_KEY, LeaderInfo
from common.etcd.metastore import MetaStore
from common.etcd.session import SESSION_PREFIX, SessionInfo
from common.schema import CollectionSchema
from common.webui.source import CLUSTER, COLLECTIONS, JOBS, QUERYNODES, View
from coordinator.catalog import Catalog, CollectionMeta
from coordinator.data.datacoord import DataCoordinator
from coordinator.data.jobs import JobRecord
from coordinator.databases import Databases
from coordinator.query.coord import QueryCoordinator
from coordinator.streaming.balancer import StreamingBalancer

RECENT_JOBS = 50  # finished jobs listed, newest first (running ones are all listed)


def _schema(schema: CollectionSchema) -> list[dict[str, Any]]:
    return [
        {
            "name": f.name,
            "type": f.dtype.name,
            "primary": f.is_primary,
            "auto_id": f.auto_id,
            "dim": f.dim or None,
            "max_length": f.max_length or None,
            "nullable": f.nullable,
            "partition_key": f.is_partition_key,
            "dynamic": f.is_dynamic,
        }
        for f in schema.fields
    ]


def _job(job: JobRecord, now: float) -> dict[str, Any]:
    end = job.finished_at or now
    return {
        "job_id": job.job_id,
        "kind": job.kind.value,
        "collection_id": job.collection_id,
        "state": job.state.value,
        "created_at": job.created_at,
        "seconds": round(max(end - job.created_at, 0.0), 3) if job.created_at else None,
        "inputs": len(job.inputs),
        "outputs": len(job.outputs),
        "rows": job.rows,
        "progress": job.progress,
        "error": job.error,
    }


class CoordinatorConsole:
    """The views ``cluster``, ``collections``, ``querynodes`` and ``jobs`` of an active coordinator."""

    views = (CLUSTER, COLLECTIONS, QUERYNODES, JOBS)

    def __init__(
        self,
        *,
        store: MetaStore,
        catalog: Catalog,
        databases: Databases,
        balancer: StreamingBalancer,
        data: DataCoordinator,
        query: QueryCoordinator,
    ) -> None:
        self._store = store
        self._catalog = catalog
        self._databases = databases
        self._balancer = balancer
        self._data = data
        self._query = query

    async def view(self, name: str) -> View:
        match name:
            case "cluster":
                return await self._cluster()
            case "collections":
                return await self._collections()
            case "querynodes":
                return await self._querynodes()
            case "jobs":
                return await self._jobs()
        raise ValueError(f"unknown view {name!r}")

    async def _cluster(self) -> View:
        found: list[SessionInfo] = []
        leader: LeaderInfo | None = None
        for kv in await self._store.scan(SESSION_PREFIX):
            if kv.key == LEADER_KEY:
                leader = LeaderInfo.from_json(kv.value)
                continue
            try:
                found.append(SessionInfo.from_json(kv.value))
            except (ValueError, KeyError, TypeError):
                continue  # not a session (another key under the prefix)
        sessions = [
            {"role": s.role, "server_id": s.server_id, "address": s.address,
             "leader": leader is not None and s.role == COORDINATOR_ROLE and s.server_id == leader.server_id}
            for s in sorted(found, key=lambda s: (s.role, s.server_id))
        ]
        view = self._balancer.view()
        pchannels = []
        for name in self._balancer.pchannel_names:
            owner = view.owner(name)
            pchannels.append({
                "name": name,
                "state": "ASSIGNED" if owner else "UNASSIGNED",
                "node_id": owner[0] if owner else None,
                "address": owner[1] if owner else "",
                "term": owner[2] if owner else None,
            })
        roles = Counter(s["role"] for s in sessions)
        return {"roles": dict(sorted(roles.items())), "sessions": sessions, "pchannels": pchannels}

    async def _collections(self) -> View:
        loads = {load.collection_id: load for load in await self._catalog.list_loads()}
        by_db: dict[str, list[dict[str, Any]]] = {d.name: [] for d in await self._databases.list()}
        for meta in sorted(await self._catalog.list_collections(), key=lambda m: (m.db_name, m.name)):
            by_db.setdefault(meta.db_name, []).append(self._collection(meta, loads.get(meta.collection_id)))
        return {"databases": [{"name": db, "collections": cs} for db, cs in by_db.items()]}

    def _collection(self, meta: CollectionMeta, load: Any) -> dict[str, Any]:
        live = [s for s in self._data.segments(collection_id=meta.collection_id) if s.is_live and self._data.visible(s)]
        by_state = Counter(s.state.name for s in live)
        by_level = Counter(s.level.name for s in live)
        if load is None:
            load_state, progress, replicas = "NotLoad", 0, 0
        else:
            _, progress, ready = self._query.view(meta)
            load_state = "Loaded" if ready else "Loading"
            replicas = load.replica_number
        return {
            "id": meta.collection_id,
            "name": meta.name,
            "state": meta.state.value,
            "fields": _schema(meta.schema),
            "dynamic_field": meta.schema.enable_dynamic_field,
            "partitions": [p.name for p in meta.all_partitions()],
            "vchannels": list(meta.vchannels),
            "load_state": load_state,
            "load_progress": progress,
            "replicas": replicas,
            "segments": dict(sorted(by_state.items())),
            "levels": dict(sorted(by_level.items())),
            "rows": sum(s.rows - s.deleted_rows for s in live),
        }

    async def _querynodes(self) -> View:
        nodes: dict[int, dict[str, Any]] = {
            n: {"node_id": n, "address": a, "delegators": [], "segments": 0, "rows": 0}
            for n, a in sorted(self._query.nodes().items())
        }
        replicas = []
        for meta in await self._catalog.list_collections():
            if not self._query.is_loaded(meta.collection_id):
                continue
            channels, _, _ = self._query.view(meta)
            for c in channels:
                if c.node_id in nodes:
                    nodes[c.node_id]["delegators"].append({
                        "collection": meta.name, "vchannel": c.vchannel, "replica_id": c.replica_id,
                        "serviceable": c.ready, "error": c.load_error,
                    })
            for served in self._query.served_segments(meta):
                for n in served.node_ids:
                    if n in nodes:
                        nodes[n]["segments"] += 1
                        nodes[n]["rows"] += served.segment.rows
            for r in self._query.replicas(meta):
                replicas.append({
                    "collection": meta.name,
                    "replica_id": r.replica_id,
                    "node_ids": list(r.node_ids),
                    "shards": [{"vchannel": s.vchannel, "leader_id": s.leader_id, "node_ids": list(s.node_ids)}
                               for s in r.shards],
                })
        return {"nodes": list(nodes.values()), "replicas": replicas}

    async def _jobs(self) -> View:
        now = time.time()
        names = {m.collection_id: m.name for m in await self._catalog.list_collections()}
        jobs = self._data.jobs()
        running = [j for j in jobs if not j.state.finished]
        finished = sorted((j for j in jobs if j.state.finished), key=lambda j: j.finished_at, reverse=True)
        out = []
        for job in [*sorted(running, key=lambda j: j.created_at), *finished[:RECENT_JOBS]]:
            doc = _job(job, now)
            doc["collection"] = names.get(job.collection_id, "")
            out.append(doc)
        return {"jobs": out, "running": len(running), "finished": len(finished)}


def view_json(doc: View) -> str:
    """A view as the gRPC answer carries it (``coordinator/console_service.py``)."""
    return json.dumps(doc, default=str, sort_keys=True)
