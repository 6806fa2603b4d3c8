"""Tracing across real role processes: one trace from the pymilvus call to the deepest stage.

etcd, a coordinator, a streaming node, a query node and a proxy, each its own process on
127.0.0.1, all with ``trace.exporter: stdout`` (``STRATA_TRACE_EXPORTER``): every role writes
each span as one JSON line to its standard output, here its log file, which the test reads back.

* an insert: the proxy's ``Insert`` span is an ancestor of the streaming node's append span
  (context carried in the WAL message, across the ``Produce`` stream), one trace id; the WAL
  batch write that made it durable links to that trace.
* a search of a flushed collection: the proxy's ``Search`` span is an ancestor of the query
  node's gRPC span, the delegator's search, its tsafe wait and the worker's segment search, and
  the proxy's plan, route and reduce spans are its children, one trace id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.harness import Cluster, create_collection, retry, vectors, wait_until

DIM = 8
ROOT = "tracing"
SEARCH = "/milvus.proto.milvus.MilvusService/Search"
INSERT = "/milvus.proto.milvus.MilvusService/Insert"

Span = dict[str, Any]


def _spans(cluster: Cluster) -> dict[str, Span]:
    """Every span the roles wrote so far, by span id; each gets its role's service name."""
    out: dict[str, Span] = {}
    for role in cluster.roles:
        for line in role.log().splitlines():
            if not line.startswith('{"name"'):
                continue
            span = json.loads(line)
            span["service"] = span["resource"]["attributes"]["service.name"]
            out[span["context"]["span_id"]] = span
    return out


def _ancestry(spans: dict[str, Span], span: Span) -> list[Span]:
    """``span`` and its ancestors, root last; fails on a parent no role wrote (a broken chain)."""
    chain = [span]
    while chain[-1]["parent_id"] is not None:
        parent = chain[-1]["parent_id"]
        assert parent in spans, f"parent {parent} of {chain[-1]['name']} not exported: {[s['name'] for s in chain]}"
        chain.append(spans[parent])
    return chain


def _names(chain: list[Span]) -> list[tuple[str, str]]:
    return [(s["service"], s["name"]) for s in reversed(chain)]


def _found(cluster: Cluster, name: str, root: str) -> list[list[Span]]:
    """The ancestries of the spans named ``name`` whose trace starts at a span named ``root``."""
    spans = _spans(cluster)
    chains = [_ancestry(spans, s) for s in spans.values() if s["name"] == name]
    return [c for c in chains if c[-1]["name"] == root]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_insert_and_search_make_one_trace_each_across_the_roles(tmp_path: Path) -> None:
    c = Cluster(tmp_path, ROOT, env={"STRATA_TRACE_EXPORTER": "stdout"})
    try:
        client = c.start(query_nodes=1)
        try:
            retry("create", lambda: create_collection(client, "c", dim=DIM, num_shards=1), timeout=60)
            rows = vectors(range(200), DIM)
            client.insert("c", rows, timeout=30)

            [insert] = wait_until_found(c, "streamingnode.append", INSERT)
            names = _names(insert)
            assert names[0] == ("strata-proxy", INSERT) and names[-1] == ("strata-streamingnode", "streamingnode.append")
            assert len({s["context"]["trace_id"] for s in insert}) == 1
            # The WAL batch that made it durable is a trace of its own, linked to the insert's.
            insert_trace = insert[0]["context"]["trace_id"]
            writes = [s for s in _spans(c).values() if s["name"] == "wal.write"
                      and any(link["context"]["trace_id"] == insert_trace for link in s.get("links", []))]
            assert len(writes) == 1 and writes[0]["service"] == "strata-streamingnode", writes

            client.flush("c", timeout=60)
            # Once the flushed segment is loaded, a search reaches the worker (before, the delegator's
            # growing rows answer alone): search until one did.
            def worker_searched() -> list[list[Span]]:
                client.search("c", data=[rows[0]["v"]], limit=3, consistency_level="Strong", timeout=10)
                return _found(c, "worker.search_segments", SEARCH)

            found = wait_until_value("a search reaching the worker", worker_searched, 90)
        finally:
            client.close()
        chain = found[0]
        names = _names(chain)
        assert names[0] == ("strata-proxy", SEARCH), names
        assert ("strata-proxy", "proxy.route") in names
        services = [service for service, _ in names]
        assert services.index("strata-querynode") > services.index("strata-proxy")  # crossed the hop
        hop = [n for s, n in names if s == "strata-querynode"]
        assert hop[0].endswith("/Search") and "delegator.search" in hop and hop[-1] == "worker.search_segments", names
        trace_id = chain[0]["context"]["trace_id"]
        assert {s["context"]["trace_id"] for s in chain} == {trace_id}
        spans = _spans(c)
        root_id = chain[-1]["context"]["span_id"]
        beside = {s["name"] for s in spans.values() if s["parent_id"] == root_id}
        assert {"proxy.plan", "proxy.route", "proxy.reduce"} <= beside, beside
        waits = [s for s in spans.values() if s["name"] == "delegator.wait_tsafe" and s["context"]["trace_id"] == trace_id]
        assert waits, "the delegator's tsafe wait is in the search's trace"
    except BaseException:
        c.dump()
        raise
    finally:
        c.stop()


def wait_until_found(c: Cluster, name: str, root: str) -> list[list[Span]]:
    return wait_until_value(f"a {name} span under {root}", lambda: _found(c, name, root), 30)


def wait_until_value(what: str, fn: Any, timeout: float) -> Any:
    result: list[Any] = []

    def done() -> bool:
        result[:] = [fn()]
        return bool(result[0])

    wait_until(what, done, timeout)
    return result[0]
