"""A plain-HTTP client of the RESTful API v2 (urllib: no SDK between the test and the server)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from tests.harness import Standalone


def post_raw(s: Standalone, path: str, data: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """POST ``data`` to ``/v2/vectordb/<path>``; the HTTP status and the JSON answer."""
    request = urllib.request.Request(
        f"{s.http_uri}/v2/vectordb/{path}", data=data, method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def post(s: Standalone, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    """POST a JSON body; the answer, which must come with HTTP 200."""
    status, answer = post_raw(s, path, json.dumps(body).encode(), headers)
    assert status == 200, (status, answer)
    return answer


def ok(s: Standalone, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    """The ``data`` of a successful call (``code`` 0)."""
    answer = post(s, path, body, headers)
    assert answer["code"] == 0, answer
    return answer["data"]


def wait_loaded(s: Standalone, name: str, db_name: str = "", timeout: float = 60.0) -> None:
    """Poll collections/get_load_state (as a REST client does) until the collection is loaded."""
    import time

    deadline = time.monotonic() + timeout
    body = {"collectionName": name, **({"dbName": db_name} if db_name else {})}
    while True:
        data = ok(s, "collections/get_load_state", body)
        if data["loadState"] == "LoadStateLoaded":
            assert data["loadProgress"] == 100
            return
        assert time.monotonic() < deadline, data
        time.sleep(0.2)
