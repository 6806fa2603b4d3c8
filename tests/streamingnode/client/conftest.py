"""Fixtures of the streaming-node client tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from streamingnode.walmanager.manager import WALManager
from tests.streamingnode.served import served_wal


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[WALManager, str]]:
    """A WAL manager with pchannel ``p0`` open at term 1, behind a real ``Produce`` server on loopback."""
    async with served_wal(tmp_path / "wal", "p0", 1) as node:
        yield node
