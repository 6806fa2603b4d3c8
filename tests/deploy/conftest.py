"""The Helm chart's renderer and the chart rendered in every scenario, for ``test_helm_*.py``: rendered once
per session and shared, read-only, by every chart test (as when they were one module)."""

from __future__ import annotations

import pytest

from tests.deploy.helmchart import Renderer, find_renderer
from tests.deploy.helmdocs import NAMESPACE, RELEASE, SCENARIOS, Doc


@pytest.fixture(scope="session")
def renderer() -> Renderer:
    return find_renderer()


@pytest.fixture(scope="session")
def rendered(renderer: Renderer) -> dict[str, list[Doc]]:
    return {name: renderer.template(values=files, release=RELEASE, namespace=NAMESPACE) for name, files in SCENARIOS.items()}

