"""Dependencies between Strata's top-level packages point one way (ARCHITECTURE.md, "Packages").

Every ``import`` in the product's packages, at module level or inside a function, is read with
``ast``; an edge is a module of one top-level package naming a module of another.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ("protos", "common", "segcore")
ROLES = ("coordinator", "streamingnode", "querynode", "proxy", "jobs")
WIRING = "launch"
PACKAGES = (*SHARED, *ROLES, WIRING)
# What one role may import of another: the other role's client interface. The coordinator submits the
# Spark jobs (their plans, sources and runner are the jobs' interface).
SEAMS = ("streamingnode.client", "jobs.plans", "jobs.sources", "jobs.runner")


def imports() -> dict[str, set[tuple[str, str]]]:
    """Top-level package -> {(importing module, imported module)} for imports across packages."""
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for top in PACKAGES:
        for path in (ROOT / top).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    if name.split(".")[0] in PACKAGES and name.split(".")[0] != top:
                        out[top].add((module, name))
    return out


EDGES = imports()


def test_the_package_graph_has_no_cycle() -> None:
    graph = {top: {name.split(".")[0] for _, name in EDGES[top]} for top in PACKAGES}
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            pytest.fail("import cycle: " + " -> ".join([*path[path.index(node) :], node]))
        if node in done:
            return
        for nxt in sorted(graph[node]):
            visit(nxt, [*path, node])
        done.add(node)

    for top in PACKAGES:
        visit(top, [])


@pytest.mark.parametrize("top", SHARED)
def test_shared_code_imports_no_role(top: str) -> None:
    bad = sorted((m, n) for m, n in EDGES[top] if n.split(".")[0] not in SHARED)
    assert not bad, f"{top} imports a role: {bad}"


def test_only_the_wiring_imports_the_wiring() -> None:
    bad = sorted((m, n) for top in PACKAGES for m, n in EDGES[top] if n.split(".")[0] == WIRING)
    assert not bad, bad


@pytest.mark.parametrize("top", ROLES)
def test_a_role_reaches_another_only_through_its_client_interface(top: str) -> None:
    bad = sorted(
        (m, n)
        for m, n in EDGES[top]
        if n.split(".")[0] in ROLES and not any(n == s or n.startswith(s + ".") for s in SEAMS)
    )
    assert not bad, f"{top} imports another role's internals: {bad}"


def test_the_walk_sees_the_known_seams() -> None:
    """The walk itself works: the proxy does append through the streaming node's producer."""
    assert ("proxy.writes", "streamingnode.client.producer") in EDGES["proxy"]


def test_the_spark_code_zip_holds_every_package_the_jobs_import() -> None:
    """``jobs/runner.py`` ships these packages to Spark's Python workers with ``--py-files``."""
    from jobs.runner import PACKAGES as SHIPPED

    graph = {top: {name.split(".")[0] for _, name in EDGES[top]} for top in PACKAGES}
    needed, todo = set(), ["jobs"]
    while todo:
        top = todo.pop()
        if top not in needed:
            needed.add(top)
            todo.extend(graph[top])
    assert needed <= set(SHIPPED), f"the jobs import {sorted(needed - set(SHIPPED))}, which runner.py does not ship"


# The coordinator's own contracts; the proxy's calls to it go through ``common.coordapi``.
_COORDINATOR_PROTOS = {"coordinator_pb2", "coordinator_pb2_grpc", "databases_pb2", "jobs_pb2"}


def _protos_imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "protos":
                names |= {a.name for a in node.names}
            elif node.module.startswith("protos."):
                names.add(node.module.removeprefix("protos."))
        elif isinstance(node, ast.Import):
            names |= {a.name.removeprefix("protos.") for a in node.names if a.name.startswith("protos.")}
    return names


def test_the_proxy_calls_the_coordinator_only_through_its_typed_client() -> None:
    """No proxy module builds a coordinator request: ``common.coordapi`` owns the messages and deadlines."""
    bad = sorted(
        (str(path.relative_to(ROOT)), name)
        for path in (ROOT / "proxy").rglob("*.py")
        for name in _protos_imported(path) & _COORDINATOR_PROTOS
    )
    assert not bad, bad
