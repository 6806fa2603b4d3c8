"""The proxy's slow-request log: what it keeps, in which order, how many."""

from __future__ import annotations

import pytest

from proxy.slow_requests import SlowRequests


def _offer(slow: SlowRequests, method: str, ms: float, *, ok: bool = True) -> None:
    slow.offer(method=method, db="default", collection="docs", ok=ok, code=0 if ok else 100, latency_ms=ms,
               peer="ipv4:127.0.0.1:5000")


def test_keeps_only_requests_at_or_over_the_threshold_newest_first() -> None:
    slow = SlowRequests(threshold_ms=100)
    _offer(slow, "Search", 99.9)
    _offer(slow, "Query", 100)
    _offer(slow, "Insert", 2500.12345, ok=False)
    kept = slow.recent()
    assert [(r.method, r.latency_ms, r.status, r.code) for r in kept] == [
        ("Insert", 2500.123, "fail", "100"),
        ("Query", 100, "success", "0"),
    ]
    view = slow.view()
    assert view["threshold_ms"] == 100 and view["capacity"] == 100
    assert [r["method"] for r in view["requests"]] == ["Insert", "Query"]
    assert set(view["requests"][0]) == {"at", "method", "db", "collection", "status", "code", "latency_ms", "peer"}


def test_keeps_the_last_capacity_requests() -> None:
    slow = SlowRequests(threshold_ms=0, capacity=3)
    for i in range(5):
        _offer(slow, f"M{i}", 1)
    assert [r.method for r in slow.recent()] == ["M4", "M3", "M2"]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        SlowRequests(threshold_ms=-1)
    with pytest.raises(ValueError):
        SlowRequests(threshold_ms=0, capacity=0)
