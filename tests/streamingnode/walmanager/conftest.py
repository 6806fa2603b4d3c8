"""Fixtures of the WAL lifetime tests (the fakes live in ``fakes.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from streamingnode.walmanager.lifetime import WALLifetime
from tests.streamingnode.walmanager.fakes import FakeFactory


@pytest.fixture
def factory() -> FakeFactory:
    return FakeFactory()


@pytest.fixture
async def lifetime(factory: FakeFactory) -> AsyncIterator[WALLifetime]:
    lt = WALLifetime("p0", factory)
    try:
        yield lt
    finally:
        await asyncio.wait_for(lt.close(), 5)
