"""Fixtures for tests of the ``local`` backend's own behaviour."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from streamingnode.walimpls.impls.local import LocalWALOpener, local_opener

MakeOpener = Callable[..., LocalWALOpener]


@pytest.fixture
def wal_root(tmp_path: Path) -> Path:
    return tmp_path / "wal"


@pytest.fixture
async def make_opener(wal_root: Path) -> AsyncIterator[MakeOpener]:
    """``make_opener(segment_bytes=..., sync=...)``: an opener on ``wal_root``,
    closed at teardown."""
    openers: list[LocalWALOpener] = []

    def make(**options: object) -> LocalWALOpener:
        opener = local_opener(wal_root, **options)  # type: ignore[arg-type]  # test options
        openers.append(opener)
        return opener

    yield make
    for opener in openers:
        await opener.close()
