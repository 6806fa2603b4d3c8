"""State gauges read when Prometheus scrapes, not kept up to date on every change.

A component that has state worth a gauge (the term of each WAL, the lag of each
vchannel's checkpoint, the segments a query node holds) registers a function
returning ``GaugeSample``s for as long as it lives; ``/metrics`` calls every
registered function and merges the samples into one family per name. Nothing
runs on the hot path, and several components of the same kind in one process
(tests, the standalone node) share the family names without colliding.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import structlog
from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = structlog.get_logger().bind(component="metrics")


@dataclass(frozen=True, slots=True, kw_only=True)
class GaugeSample:
    name: str
    help: str
    labels: dict[str, str]
    value: float


Source = Callable[[], Iterable[GaugeSample]]


class _StateCollector(Collector):
    def __init__(self) -> None:
        self._sources: dict[int, Source] = {}
        self._ids = itertools.count()

    def add(self, source: Source) -> int:
        token = next(self._ids)
        self._sources[token] = source
        return token

    def remove(self, token: int) -> None:
        self._sources.pop(token, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        samples: dict[str, list[GaugeSample]] = defaultdict(list)
        for source in list(self._sources.values()):
            try:
                for s in source():
                    samples[s.name].append(s)
            except Exception:  # a scrape must not fail because one component is mid-change
                log.exception("state metrics source failed")
        for name, group in sorted(samples.items()):
            keys = sorted({k for s in group for k in s.labels})
            family = GaugeMetricFamily(name, group[0].help, labels=keys)
            for s in group:
                family.add_metric([s.labels.get(k, "") for k in keys], s.value)
            yield family

    def describe(self) -> list[GaugeMetricFamily]:
        return []  # names vary with the registered sources: nothing to check at registration


STATE = _StateCollector()
REGISTRY.register(STATE)


class StateMetrics:
    """``source``'s gauges in ``/metrics`` from ``start()`` to ``stop()`` (both idempotent)."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self._token: int | None = None

    def start(self) -> None:
        if self._token is None:
            self._token = STATE.add(self._source)

    def stop(self) -> None:
        if self._token is not None:
            STATE.remove(self._token)
            self._token = None
