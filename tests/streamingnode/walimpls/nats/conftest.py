"""Fixtures of the ``nats`` backend tests: openers on the session's server, raw JetStream access."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS

from streamingnode.walimpls.impls.nats import NatsWALOpener, nats_opener
from streamingnode.walimpls.impls.nats.server import NatsServer
from tests.streamingnode.walimpls.conftest import stream_prefix

MakeOpener = Callable[..., NatsWALOpener]


@pytest.fixture
async def make_opener(nats_server: NatsServer, tmp_path: Path) -> AsyncIterator[MakeOpener]:
    """``make_opener(**options)``: an opener on the session server with this test's stream prefix."""
    openers: list[NatsWALOpener] = []

    def make(**options: Any) -> NatsWALOpener:
        options = {"servers": nats_server.url, "stream_prefix": stream_prefix(tmp_path), **options}
        opener = nats_opener(**options)
        openers.append(opener)
        return opener

    yield make
    for opener in openers:
        await opener.close()


@pytest.fixture
async def raw_nats(nats_server: NatsServer) -> AsyncIterator[NATS]:
    """A plain client connection, to look at (and poke) the streams directly."""
    nc = await nats.connect(nats_server.url)
    yield nc
    await nc.close()


@pytest.fixture
def prefix(tmp_path: Path) -> str:
    return stream_prefix(tmp_path)
