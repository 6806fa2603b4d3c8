"""The delegator tests' WAL: pchannel ``P`` served over gRPC on loopback (``walnode.served_wal``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.querynode.delegator.walnode import Node, served_wal


@pytest.fixture()
async def node(tmp_path: Path) -> AsyncIterator[Node]:
    """In WAL files of 1 MiB (a module that needs small files defines its own ``node``)."""
    async with served_wal(tmp_path / "wal", segment_bytes=1 << 20) as served:
        yield served
