"""The official Milvus Node.js SDK runs its README flow against the session's standalone.

``tests/e2e/node/readme_flow.js`` connects, creates a collection, inserts,
``flushSync``s (it polls ``GetFlushState`` with segment ids only), creates an
HNSW index, ``loadCollectionSync``s, searches, queries, counts, asks
``getReplicas`` and ``checkHealth``, releases and drops; each step checks its
answer and the script exits non-zero at the first wrong one. The SDK, pinned
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
