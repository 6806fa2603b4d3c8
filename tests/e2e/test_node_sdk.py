"""The official Milvus Node.js SDK runs its README flow against the session's standalone.

``tests/e2e/node/readme_flow.js`` connects, creates a collection, inserts,
``flushSync``s (it polls ``GetFlushState`` with segment ids only), creates an
HNSW index, ``loadCollectionSync``s, searches, queries, counts, asks
``getReplicas`` and ``checkHealth``, releases and drops; each step checks its
answer and the script exits non-zero at the first wrong one.
``tests/e2e/node/http_flow.js`` runs the SDK's ``HttpClient`` (the RESTful API
v2 on ``proxy.http.port``) the same way: create (quick setup), insert, wait
until loaded, flush, search, query, describe, drop. The SDK, pinned
with every dependency in ``tests/e2e/node/package-lock.json``, is installed
by ``make install`` (``make node-sdk``) into ``.cache/node-sdk``, with Node.js
and npm from apt when missing. In CI (``CI`` set) a missing Node.js or SDK
fails the test; elsewhere only a missing Node.js skips it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pymilvus import MilvusClient

from tests.e2e.util import unique_name
from tests.harness import REPO, Standalone

SCRIPT = REPO / "tests" / "e2e" / "node" / "readme_flow.js"
HTTP_SCRIPT = REPO / "tests" / "e2e" / "node" / "http_flow.js"
SDK_MODULES = REPO / ".cache" / "node-sdk" / "node_modules"
FLOW_TIMEOUT_SECONDS = 180.0


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        reason = "Node.js is not installed: `make node-sdk` installs it (nodejs and npm with apt)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    if not (SDK_MODULES / "@zilliz" / "milvus2-sdk-node" / "package.json").exists():
        pytest.fail(f"the Node.js SDK is not installed in {SDK_MODULES.parent}: run `make node-sdk`")
    return node


@pytest.mark.timeout(FLOW_TIMEOUT_SECONDS + 60)
def test_the_node_sdk_readme_flow_runs_against_strata(standalone: Standalone, milvus: MilvusClient) -> None:
    node = _node()
    name = unique_name("node")
    try:
        done = subprocess.run(
            [node, str(SCRIPT), f"127.0.0.1:{standalone.port}", name],
            env={**os.environ, "NODE_PATH": str(SDK_MODULES)},
            capture_output=True,
            text=True,
            timeout=FLOW_TIMEOUT_SECONDS,
            cwd=Path(SCRIPT).parent,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(
            f"the Node.js flow did not finish in {FLOW_TIMEOUT_SECONDS:.0f} s (a flushSync that never "
            f"returns hangs here): {err.stdout!r} {err.stderr!r}"
        )
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr}"
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary == {
        "flushed": True,
        "search_top_id": 7,
        "query_ids": [3, 5, 199],
        "count": 200,
        "replicas": 1,
        "healthy": True,
    }
    assert not milvus.has_collection(name)  # the flow dropped it


@pytest.mark.timeout(FLOW_TIMEOUT_SECONDS + 60)
def test_the_node_sdk_http_client_flow_runs_against_strata(standalone: Standalone, milvus: MilvusClient) -> None:
    node = _node()
    name = unique_name("nodehttp")
    try:
        done = subprocess.run(
            [node, str(HTTP_SCRIPT), standalone.http_uri, name],
            env={**os.environ, "NODE_PATH": str(SDK_MODULES)},
            capture_output=True,
            text=True,
            timeout=FLOW_TIMEOUT_SECONDS,
            cwd=HTTP_SCRIPT.parent,
        )
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"the Node.js HttpClient flow did not finish in {FLOW_TIMEOUT_SECONDS:.0f} s: "
                    f"{err.stdout!r} {err.stderr!r}")
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr}"
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary == {
        "has": True,
        "first_ids": ["0", "1", "2"],  # the SDK asks for int64s as strings (Accept-Type-Allow-Int64: false)
        "search_top": {"id": "7", "tag": "t2"},
        "query": [["199", "t4"], ["3", "t3"], ["5", "t0"]],
        "fields": ["id", "vector"],
        "has_after_drop": False,
    }
    assert not milvus.has_collection(name)  # the flow dropped it
