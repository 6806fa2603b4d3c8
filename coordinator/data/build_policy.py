"""Which segment indexes to build, and on which query node (pure: metadata in, builds out).

A *build* is one vector index of one FLUSHED L1 segment. It is wanted while
``describe_index`` counts the segment as not indexed (``index_progress``): the
segment ``needs_build`` (1,024 rows or more, an index that trains) and no
index file of it is saved. Segments a running mix compaction is rewriting are
left alone: their outputs get built instead.

Assignment, oldest segment first, at most one build per query node:

* a segment a worker holds (loaded) goes to that worker: it builds from the
  rows it has and swaps the index in, or finds it done by its own background
  build;
* a segment of a loaded partition that no worker holds yet waits: the query
  coordinator is placing it, and the worker that loads it builds its index
  (sending it elsewhere too would build it twice);
* any other segment goes to a free query node.

A build that failed waits ``Backoff`` before it is tried again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from common.segment import SegmentLevel, SegmentMeta, SegmentState
from coordinator.data.index_progress import needs_build

BuildKey = tuple[int, int]  # (segment, index)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexDef:
    """An index of a collection (on a vector or a scalar field), as the catalog has it."""

    index_id: int
    field_name: str
    index_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Build:
    segment: SegmentMeta
    index: IndexDef

    @property
    def key(self) -> BuildKey:
        return (self.segment.segment_id, self.index.index_id)


def wanted_builds(
    segments: Iterable[SegmentMeta],
    indexes: Sequence[IndexDef],
    *,
    saved: Collection[BuildKey],
    compacting: Collection[int],
) -> list[Build]:
    """Builds of ``indexes`` (one collection's) over its ``segments`` that no saved file covers."""
    out = []
    for seg in segments:
        if seg.state != SegmentState.FLUSHED or seg.level != SegmentLevel.L1 or seg.segment_id in compacting:
            continue
        for index in indexes:
            build = Build(segment=seg, index=index)
            if needs_build(seg, index.index_type) and build.key not in saved:
                out.append(build)
    return out


def assign(
    builds: Iterable[Build],
    *,
    nodes: Collection[int],
    busy: Collection[int],
    holders: Mapping[tuple[int, int], int],
    loaded: Callable[[SegmentMeta], bool],
) -> list[tuple[Build, int]]:
    """``(build, node)`` pairs to start now: each node at most once and only if not ``busy``.

    Args:
        builds: the builds to start (running ones and those backing off left out).
        nodes: live query nodes.
        busy: nodes running a build already.
        holders: ``(collection, segment)`` -> the node whose worker holds it.
        loaded: whether a segment's partition is loaded.
    """
    free = sorted(set(nodes) - set(busy))
    taken: set[int] = set()
    out = []
    for build in sorted(builds, key=lambda b: b.key):
        seg = build.segment
        holder = holders.get((seg.collection_id, seg.segment_id))
        if holder is not None:
            node = holder if holder in free and holder not in taken else None
        elif loaded(seg):
            node = None  # being placed on a worker, which builds it
        else:
            node = next((n for n in free if n not in taken), None)
        if node is not None:
            taken.add(node)
            out.append((build, node))
    return out


class Backoff:
    """A failed build waits ``first`` seconds, doubling with each failure in a row up to ``cap``."""

    def __init__(self, *, first: float = 1.0, cap: float = 60.0) -> None:
        self._first = first
        self._cap = cap
        self._failures: dict[BuildKey, tuple[int, float]] = {}  # key -> (failures in a row, retry at)

    def failed(self, key: BuildKey, now: float) -> float:
        """Record a failure at ``now``; return the wait before the next attempt."""
        times = self._failures.get(key, (0, 0.0))[0] + 1
        delay = min(self._cap, self._first * 2 ** (times - 1))
        self._failures[key] = (times, now + delay)
        return delay

    def succeeded(self, key: BuildKey) -> None:
        self._failures.pop(key, None)

    def ready(self, key: BuildKey, now: float) -> bool:
        entry = self._failures.get(key)
        return entry is None or now >= entry[1]

    def keep(self, keys: Collection[BuildKey]) -> None:
        """Forget builds no longer wanted (segments dropped, indexes saved or dropped)."""
        self._failures = {k: v for k, v in self._failures.items() if k in keys}
