"""Fixtures of the cluster tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.harness import WALBackend


@pytest.fixture(params=["local", "nats"])
def wal_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WALBackend]:
    """The WAL of the test's streaming nodes: a shared directory, or a NATS JetStream server (stopped after)."""
    backend = WALBackend(request.param, tmp_path / "wal-backend")
    backend.start()
    try:
        yield backend
    finally:
        backend.stop()
