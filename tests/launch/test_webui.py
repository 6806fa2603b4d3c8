"""The web console (``/webui``) of a real ``strata standalone`` after a pymilvus workload.

One standalone for the module, every request kept as slow (``proxy.slow_request_ms`` 0). The
JSON views are read from the node process's operations port (the proxy's: every view) and from
the coordinator's (the cluster views, built from its own state); then headless Chromium
renders the page: its DOM after the script ran shows the collections and roles, and its
screenshot is a PNG of the window's size with the page's header drawn.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from pymilvus import DataType, MilvusClient

from tests.harness import Standalone, dump_logs_on_failure
from tests.ops import http, ops_url
from tests.png import read_png

DIM = 8
ROWS = 300
WIDTH, HEIGHT = 1200, 900
HEADER_RGB = (0x1D, 0x35, 0x57)  # the page's header bar (console.css)
pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Workload:
    loaded: str  # ROWS rows, flushed, searched
    unloaded: str  # created with a schema and no index: not loaded


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    s = Standalone(tmp_path_factory.mktemp("webui") / "data", env={"STRATA_PROXY_SLOW_REQUEST_MS": "0"})
    s.start()
    try:
        with dump_logs_on_failure(s):
            yield s
    finally:
        try:
            s.stop()
        finally:
            s.kill()


@pytest.fixture(scope="module")
def workload(node: Standalone) -> Workload:
    client = MilvusClient(node.uri)
    try:
        loaded, unloaded = f"webui_{uuid.uuid4().hex[:8]}", f"webui_cold_{uuid.uuid4().hex[:8]}"
        client.create_collection(loaded, dimension=DIM)
        client.insert(loaded, [{"id": i, "vector": [random.random() for _ in range(DIM)]} for i in range(ROWS)])
        client.flush(loaded)
        client.search(loaded, data=[[random.random() for _ in range(DIM)]], limit=3)
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("pk", DataType.INT64, is_primary=True)
        schema.add_field("emb", DataType.FLOAT_VECTOR, dim=4)
        client.create_collection(unloaded, schema=schema)
        return Workload(loaded=loaded, unloaded=unloaded)
    finally:
        client.close()


def _base(node: Standalone, role: str) -> str:
    return ops_url((node.data_dir / "logs" / f"{role}.log").read_text(errors="replace"))


def _view(base: str, name: str) -> dict[str, Any]:
    status, body = http(f"{base}/webui/api/{name}")
    assert status == 200, body
    doc = json.loads(body)
    assert isinstance(doc, dict)
    return doc


def _view_until(base: str, name: str, ready: Callable[[dict[str, Any]], bool], seconds: float = 30) -> dict[str, Any]:
    """The view once ``ready`` holds for it (or as it is after ``seconds``: the test's asserts tell)."""
    deadline = time.monotonic() + seconds
    view = _view(base, name)
    while not ready(view) and time.monotonic() < deadline:
        time.sleep(0.2)
        view = _view(base, name)
    return view


def _collection(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found = [c for db in doc["databases"] if db["name"] == "default" for c in db["collections"] if c["name"] == name]
    assert len(found) == 1, doc
    return found[0]


def test_views_show_the_cluster_and_the_workload(node: Standalone, workload: Workload) -> None:
    base = _base(node, "standalone-node")
    assert json.loads(http(f"{base}/webui/api")[1])["views"] == [
        "cluster", "collections", "querynodes", "jobs", "slow_requests"
    ]

    cluster = _view(base, "cluster")
    assert cluster["roles"] == {"coordinator": 1, "proxy": 1, "querynode": 1, "streamingnode": 1}
    streaming = [s for s in cluster["sessions"] if s["role"] == "streamingnode"]
    assert [s["leader"] for s in cluster["sessions"] if s["role"] == "coordinator"] == [True]
    assert len(cluster["pchannels"]) == 4  # strata standalone's default
    for p in cluster["pchannels"]:
        assert p["state"] == "ASSIGNED" and p["node_id"] == streaming[0]["server_id"] and p["term"] >= 1

    collections = _view(base, "collections")
    hot = _collection(collections, workload.loaded)
    assert hot["rows"] == ROWS and hot["segments"].get("FLUSHED", 0) >= 1
    assert hot["load_state"] == "Loaded" and hot["load_progress"] == 100 and hot["replicas"] == 1
    assert [f["name"] for f in hot["fields"]][:2] == ["id", "vector"] and hot["fields"][1]["dim"] == DIM
    cold = _collection(collections, workload.unloaded)
    assert cold["load_state"] == "NotLoad" and cold["rows"] == 0 and cold["segments"] == {}
    assert [(f["name"], f["type"], f["primary"]) for f in cold["fields"]] == [
        ("pk", "INT64", True), ("emb", "FLOAT_VECTOR", False)
    ]

    # A flushed segment reaches the query node at the coordinator's next distribution round
    # (a handoff, as in Milvus): until then the node still serves those rows as growing ones.
    querynodes = _view_until(base, "querynodes", lambda v: sum(n["segments"] for n in v["nodes"])
                             >= hot["segments"]["FLUSHED"])
    [qn] = querynodes["nodes"]
    mine = [d for d in qn["delegators"] if d["collection"] == workload.loaded]
    assert mine and all(d["serviceable"] for d in mine)
    assert qn["segments"] >= hot["segments"]["FLUSHED"] and qn["rows"] >= ROWS
    assert [r["node_ids"] for r in querynodes["replicas"] if r["collection"] == workload.loaded] == [[qn["node_id"]]]

    jobs = _view(base, "jobs")
    assert jobs["running"] == 0 and isinstance(jobs["jobs"], list)

    slow = _view(base, "slow_requests")
    assert slow["threshold_ms"] == 0
    methods = {r["method"] for r in slow["requests"] if r["collection"] == workload.loaded}
    assert {"CreateCollection", "Insert", "Search"} <= methods
    assert all(r["status"] == "success" for r in slow["requests"] if r["collection"] == workload.loaded)


def test_the_coordinator_serves_the_cluster_views_itself(node: Standalone, workload: Workload) -> None:
    base = _base(node, "coordinator")
    assert json.loads(http(f"{base}/webui/api")[1])["views"] == ["cluster", "collections", "querynodes", "jobs"]
    assert _collection(_view(base, "collections"), workload.loaded)["rows"] == ROWS
    assert len(_view(base, "cluster")["pchannels"]) == 4
    status, body = http(f"{base}/webui/api/slow_requests")
    assert status == 404 and "not served by coordinator" in json.loads(body)["error"]


class _Elements(HTMLParser):
    """The attributes of every element of a DOM dump, and the text inside each ``data-*`` element."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))


def _chromium(profile: Path, *args: str) -> str:
    binary = shutil.which("chromium")
    assert binary is not None, "chromium is not installed (make test installs it: `make chromium`)"
    done = subprocess.run(
        [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=10000", *args],
        capture_output=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode(errors="replace")


def test_chromium_renders_the_console(node: Standalone, workload: Workload, tmp_path: Path) -> None:
    url = f"{_base(node, 'standalone-node')}/webui"
    dom = _chromium(tmp_path / "profile", "--dump-dom", url)
    parsed = _Elements()
    parsed.feed(dom)
    body = [attrs for tag, attrs in parsed.elements if tag == "body"]
    assert body and body[0].get("data-loaded") == "true", "the script did not finish a refresh"
    roles = {attrs["data-role"] for tag, attrs in parsed.elements if tag == "li" and "data-role" in attrs}
    assert roles == {"coordinator", "proxy", "querynode", "streamingnode"}
    rows = {attrs["data-collection"] for tag, attrs in parsed.elements if tag == "tr" and "data-collection" in attrs}
    assert {workload.loaded, workload.unloaded} <= rows
    assert "unavailable" not in dom  # every view rendered, none reported an error

    shot = tmp_path / "console.png"
    _chromium(tmp_path / "profile-shot", f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}",
              "--hide-scrollbars", url)
    image = read_png(shot.read_bytes())
    assert (image.width, image.height) == (WIDTH, HEIGHT)
    assert image.pixel(5, 5) == HEADER_RGB  # the header bar is drawn
    colours = {image.pixel(x, y) for y in range(0, HEIGHT, 15) for x in range(0, WIDTH, 15)}
    assert len(colours) > 10, "the screenshot is (nearly) blank"
