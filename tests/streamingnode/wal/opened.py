"""A WAL over the local backend in a test's directory, opened and started, closed after."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from streamingnode.wal.interceptors import Interceptor
from streamingnode.wal.timestamps import TimestampSource
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.registry import build_opener


@contextlib.asynccontextmanager
async def local_wal(
    root: Path, tso: TimestampSource, *, tick_interval: float, interceptors: Sequence[Interceptor[Any]] = ()
) -> AsyncIterator[WAL]:
    """pchannel ``p0`` at term 1 under ``root``."""
    opener = build_opener("local", root_dir=root)
    impl = await opener.open("p0", 1)
    w = WAL(impl, tso, tick_interval=tick_interval, interceptors=interceptors)
    await w.start()
    try:
        yield w
    finally:
        await w.close()
        await opener.close()
