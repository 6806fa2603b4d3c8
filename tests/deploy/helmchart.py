"""Render the Helm chart the way a user would: ``helm`` when it is on PATH, else the repo's renderer.

The renderer (``deploy/helm/render``) is built with Debian's Go and sprig by
``deploy/helm/render/build.sh`` into ``build/helm-render/<hash of its sources>/``
(gitignored), once per change of its sources. Neither being available is a
failure, never a skip: ``make install`` installs Go and sprig.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.harness import REPO

CHART = REPO / "deploy" / "helm" / "strata"
RENDER_SRC = REPO / "deploy" / "helm" / "render"
BUILD_DIR = REPO / "build" / "helm-render"


class RenderError(RuntimeError):
    """The chart did not render (a template error, ``required`` or ``fail``); the message is the tool's."""


@dataclass(frozen=True, slots=True)
class Renderer:
    """``helm`` or the repo's renderer: both take ``template NAME CHART -f FILE --set K=V -n NS``."""

    command: tuple[str, ...]

    @property
    def is_helm(self) -> bool:
        return Path(self.command[0]).name == "helm"

    def _run(self, args: list[str]) -> str:
        result = subprocess.run([*self.command, *args], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise RenderError(result.stderr.strip() or result.stdout.strip())
        return result.stdout

    def template(
        self,
        *,
        values: list[Path] | None = None,
        sets: list[str] | None = None,
        release: str = "strata",
        namespace: str = "vectors",
    ) -> list[dict[str, Any]]:
        """Every rendered object (empty documents dropped)."""
        # A fixed Kubernetes version: helm checks Chart.yaml's kubeVersion against it.
        args = ["template", release, str(CHART), "--namespace", namespace, "--kube-version", "v1.30.0"]
        for f in values or []:
            args += ["-f", str(f)]
        for s in sets or []:
            args += ["--set", s]
        docs = [d for d in yaml.safe_load_all(self._run(args)) if d]
        assert all(isinstance(d, dict) for d in docs), docs
        return docs

    def lint(self, *, values: list[Path] | None = None) -> str:
        args = ["lint", str(CHART)]
        for f in values or []:
            args += ["-f", str(f)]
        return self._run(args)


def _sources_hash() -> str:
    digest = hashlib.sha256()
    for name in ("main.go", "go.mod", "build.sh"):
        digest.update((RENDER_SRC / name).read_bytes())
    return digest.hexdigest()[:16]


def find_renderer() -> Renderer:
    """``helm`` from PATH, else the repo's renderer, built if its sources changed."""
    helm = shutil.which("helm")
    if helm is not None:
        return Renderer((helm,))
    binary = BUILD_DIR / _sources_hash() / "render"
    if not binary.exists():
        if shutil.which("go") is None:
            raise RuntimeError(
                "neither helm nor go is installed: `make install` installs golang-go and "
                "golang-github-masterminds-sprig-dev (or put helm on PATH)"
            )
        result = subprocess.run(
            [str(RENDER_SRC / "build.sh"), str(binary)], capture_output=True, text=True, timeout=600
        )
        if result.returncode != 0:
            raise RuntimeError(f"building the chart renderer failed:\n{result.stdout}\n{result.stderr}")
    return Renderer((str(binary),))


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    """name -> object of the rendered objects of ``kind``."""
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert name in found, f"no {kind} {name}; rendered: {sorted(found)}"
    return found[name]
