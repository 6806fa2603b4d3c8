"""Fixtures shared by the WAL backend tests.

``backend`` runs a test once per registered backend. A new backend joins the
conformance suite with one line in ``BACKEND_OPTIONS``; a backend that needs a
server gets it from a session fixture through ``request.getfixturevalue``, so
the server only starts when that backend's tests run.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from streamingnode.walimpls import LogEntry, Scanner, WALOpener, build_opener, registered_backends
from streamingnode.walimpls.impls.nats.server import NatsServer


def stream_prefix(tmp: Path) -> str:
    """A stream prefix of one test: its streams never meet another test's on the shared server."""
    return "t" + hashlib.sha1(str(tmp).encode()).hexdigest()[:16]


# backend name -> its options for one test, given the test's request and tmp_path.
BACKEND_OPTIONS: dict[str, Callable[[pytest.FixtureRequest, Path], dict[str, Any]]] = {
    # Small segments so that rolls and truncation happen in every test.
    "local": lambda request, tmp: {"root_dir": str(tmp / "wal"), "segment_bytes": 2048},
    "nats": lambda request, tmp: {"servers": request.getfixturevalue("nats_server").url, "stream_prefix": stream_prefix(tmp)},
}


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServer]:
    """One ``nats-server -js`` on 127.0.0.1 for the session; each test uses its own stream prefix."""
    server = NatsServer(tmp_path_factory.mktemp("nats"))
    server.start()
    yield server
    server.stop()


@dataclass
class Backend:
    """One backend under test; openers it builds are closed at teardown."""

    name: str
    options: dict[str, Any]
    openers: list[WALOpener] = field(default_factory=list)

    def opener(self) -> WALOpener:
        opener = build_opener(self.name, **self.options)
        self.openers.append(opener)
        return opener


@pytest.fixture(params=registered_backends())
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Backend]:
    make_options = BACKEND_OPTIONS.get(request.param)
    if make_options is None:
        pytest.fail(f"wal backend {request.param!r} has no entry in BACKEND_OPTIONS")
    under_test = Backend(request.param, make_options(request, tmp_path))
    yield under_test
    for opener in under_test.openers:
        await opener.close()


async def _take(scanner: Scanner, n: int, timeout: float = 5.0) -> list[LogEntry]:
    """The next ``n`` entries of ``scanner``; fails the test after ``timeout``."""
    out: list[LogEntry] = []
    it = aiter(scanner)
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out.append(await anext(it))
    return out


async def _nothing_within(scanner: Scanner, seconds: float = 0.2) -> bool:
    """True if ``scanner`` delivers nothing for ``seconds``.

    The pending ``__anext__`` is cancelled, which a scanner must survive.
    """
    try:
        async with asyncio.timeout(seconds):
            await anext(aiter(scanner))
    except TimeoutError:
        return True
    return False


Take = Callable[..., Coroutine[Any, Any, list[LogEntry]]]
NothingWithin = Callable[..., Awaitable[bool]]


@pytest.fixture
def take() -> Take:
    """``await take(scanner, n, timeout=5.0)``: the next ``n`` entries."""
    return _take


@pytest.fixture
def nothing_within() -> NothingWithin:
    """``await nothing_within(scanner, seconds=0.2)``: True if nothing arrives."""
    return _nothing_within
