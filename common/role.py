"""What every role process shares: a start/stop component and the run-until-signal loop."""

from __future__ import annotations

import asyncio
import signal
from typing import Protocol

import structlog


class Component(Protocol):
    """A role's composition root: ``start()`` in dependency order, ``stop()`` in reverse."""

    @property
    def address(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def run_until_signalled(component: Component, role: str) -> None:
    """Start ``component``, serve until SIGINT/SIGTERM, then stop it."""
    log = structlog.get_logger().bind(component=role)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await component.start()
    log.info("role ready", address=component.address)
    await stop.wait()
    log.info("role stopping")
    await component.stop()
    log.info("role stopped")
