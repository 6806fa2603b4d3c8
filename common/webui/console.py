"""The web console's routes on the operations port: one static page and its JSON views.

- ``GET /webui`` (or ``/webui/``): the page, plain HTML with a script that
  fetches the views and renders them as tables (no build step, no framework);
  ``/webui/console.js`` and ``/webui/console.css`` beside it;
- ``GET /webui/api``: ``{"views": [...]}``, the views this process serves;
- ``GET /webui/api/VIEW``: the view as JSON (``source.py`` lists them). A view
  this process does not serve is a 404, one it cannot build now (a standby
  coordinator, a coordinator out of reach, a role still starting) a 503,
  both with ``{"error": "..."}`` saying why.

Any other method is a 405. Like the rest of the port it has no
authentication: it shows names, counts and addresses, never row data.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources

import structlog

from common.opsroutes import OpsAnswer
from common.webui.source import VIEWS, ConsoleSource, ViewUnavailable

PREFIX = "/webui"
API = f"{PREFIX}/api"
_STATIC = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}
_JSON = "application/json"


def _static_files() -> dict[str, bytes]:
    root = resources.files("common.webui") / "static"
    return {name: (root / name).read_bytes() for name in _STATIC}


def _json(status: int, doc: object) -> OpsAnswer:
    return status, _JSON, json.dumps(doc, default=str, sort_keys=True).encode()


class WebConsole:
    """Serves ``/webui``; ``source`` gives the role's views, or None while the role has none yet."""

    def __init__(self, source: Callable[[], ConsoleSource | None], *, role: str = "") -> None:
        self._source = source
        self._role = role
        self._files = _static_files()
        self._log = structlog.get_logger().bind(component="webui", role=role)

    async def answer(self, method: str, target: str) -> OpsAnswer | None:
        path = target.split("?", 1)[0].rstrip("/") or "/"
        if path != PREFIX and not path.startswith(PREFIX + "/"):
            return None
        if method != "GET":
            return 405, "text/plain; charset=utf-8", b"method not allowed\n"
        if path in (PREFIX, f"{PREFIX}/index.html"):
            return 200, _STATIC["index.html"], self._files["index.html"]
        name = path.removeprefix(PREFIX + "/")
        if name in _STATIC:
            return 200, _STATIC[name], self._files[name]
        if path == API:
            source = self._source()
            return _json(200, {"role": self._role, "views": list(source.views) if source is not None else []})
        if path.startswith(API + "/"):
            return await self._view(path.removeprefix(API + "/"))
        return 404, "text/plain; charset=utf-8", b"not found\n"

    async def _view(self, name: str) -> OpsAnswer:
        if name not in VIEWS:
            return _json(404, {"error": f"unknown view {name!r}: one of {', '.join(VIEWS)}"})
        source = self._source()
        if source is None:
            return _json(503, {"error": f"{self._role or 'this process'} is not serving yet"})
        if name not in source.views:
            return _json(404, {"error": f"view {name!r} is not served by {self._role or 'this process'}"})
        try:
            doc = await source.view(name)
        except ViewUnavailable as err:
            return _json(503, {"error": str(err)})
        except Exception as err:  # request boundary: the page shows the error, the port keeps serving
            self._log.exception("console view failed", view=name)
            return _json(500, {"error": f"{type(err).__name__}: {err}"})
        return _json(200, doc)
