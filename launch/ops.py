"""A role process with its operations port (``common/opsserver.py``): ``/metrics``, ``/healthz``, ``/log/level``,
and the web console (``/webui``, ``common/webui/``) of a role that has one (coordinator, proxy).

The port opens before the role starts, so a scrape or probe during a long
start (a standby coordinator, WAL recovery) gets an answer: ``/healthz`` is
500 with the role's reasons until it can serve. It closes after the role stopped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from common.opsroutes import OpsRoutes
from common.opsserver import OpsServer
from common.webui.console import WebConsole
from common.webui.source import ConsoleSource

#: The role's console views, or None while it has none (starting, a standby coordinator).
ConsoleSources = Callable[[], ConsoleSource | None]


class ObservableRole(Protocol):
    @property
    def address(self) -> str: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def health_reasons(self) -> list[str]: ...


class Observed:
    """``role`` plus its operations port on ``host:port`` (``port`` None: no port, the role alone);
    ``console``: the role's web console views, served under ``/webui`` (None: no console)."""

    def __init__(
        self, role: ObservableRole, *, name: str, host: str, port: int | None, console: ConsoleSources | None = None
    ) -> None:
        self._role = role
        health: Callable[[], Awaitable[list[str]]] = role.health_reasons
        routes: tuple[OpsRoutes, ...] = () if console is None else (WebConsole(console, role=name),)
        self.ops = OpsServer(host=host, port=port, health=health, role=name, routes=routes) if port is not None else None

    @property
    def address(self) -> str:
        return self._role.address

    async def start(self) -> None:
        if self.ops is not None:
            await self.ops.start()
        try:
            await self._role.start()
        except BaseException:  # a failed or cancelled start: close the port, re-raise
            if self.ops is not None:
                await self.ops.stop()
            raise

    async def stop(self) -> None:
        try:
            await self._role.stop()
        finally:
            if self.ops is not None:
                await self.ops.stop()
