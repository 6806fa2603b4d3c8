"""Test helpers for a role's operations port (``common/opsserver.py``): find it in the log, scrape it."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

_ADDRESS = re.compile(r"""address["'=: ]+(127\.0\.0\.1:\d+)""")


def ops_url(log_text: str) -> str:
    """``http://HOST:PORT`` of the last ``ops port serving`` line of a role's log (text or JSON)."""
    found = [m.group(1) for line in log_text.splitlines()
             if "ops port serving" in line and (m := _ADDRESS.search(line)) is not None]
    assert found, "no 'ops port serving' line in the log"
    return f"http://{found[-1]}"


def http(url: str, *, method: str = "GET", body: bytes | None = None, timeout: float = 30) -> tuple[int, str]:
    """Status and body of one request; an HTTP error status is returned, not raised."""
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(base: str) -> Samples:
    """Every sample of ``base/metrics``: ``{(name, labels): value}``."""
    status, text = http(f"{base}/metrics")
    assert status == 200, text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)
