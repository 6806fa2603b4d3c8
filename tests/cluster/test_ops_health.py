"""``/healthz`` of each role of a real cluster, healthy, then with a query node killed and a streaming node frozen.

Every role is its own process with its operations port on a free port (found
in its log). The proxy's ``/healthz`` is what ``CheckHealth`` answers (the
proxy, then every node the coordinator checks), so it turns 500 and names the
node when one dies; the roles that still work stay 200; a frozen role does not
answer its own probe at all.
"""

from __future__ import annotations

import signal
import urllib.error
from pathlib import Path

import pytest

from tests.cluster.harness import cluster, wait_until
from tests.ops import http, ops_url

pytestmark = pytest.mark.timeout(240)


def test_healthz_follows_what_each_role_can_do(tmp_path: Path) -> None:
    with cluster(tmp_path, "opshealth", query_nodes=1) as (c, _client):
        urls = {r.name: ops_url(r.log()) for r in c.roles}
        for name, url in urls.items():
            wait_until(f"{name} healthy", lambda url=url: http(f"{url}/healthz")[0] == 200, timeout=60)

        c.role("qn-0").kill()
        wait_until("the proxy reports the dead query node",
                   lambda: (a := http(f"{urls['proxy']}/healthz"))[0] == 500 and "QueryNode" in a[1], timeout=60)
        assert http(f"{urls['streamingnode']}/healthz") == (200, "OK\n")
        assert http(f"{urls['coordinator']}/healthz") == (200, "OK\n")

        streaming = c.role("streamingnode")
        streaming.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises((TimeoutError, urllib.error.URLError)):
                http(f"{urls['streamingnode']}/healthz", timeout=2)
            wait_until("the proxy reports the frozen streaming node",
                       lambda: "StreamingNode" in http(f"{urls['proxy']}/healthz")[1], timeout=60)
        finally:
            streaming.send_signal(signal.SIGCONT)
