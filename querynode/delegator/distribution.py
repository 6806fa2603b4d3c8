"""The delegator's view of which worker serves which sealed segment, as versioned snapshots.

Every change makes a new immutable ``Snapshot`` with a higher version. A read
pins the current snapshot for as long as it runs and reads exactly the
segments it names; a release first publishes the snapshot without the segment,
then waits (``drained``) until no read pinned an older one, and only then asks
the worker to drop the segment. So no read ever finds a segment gone that its
snapshot promised.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class Placement:
    node_id: int
    address: str


@dataclass(frozen=True, slots=True)
class Snapshot:
    version: int
    sealed: Mapping[int, Placement] = field(default_factory=dict)

    def by_worker(self) -> dict[Placement, list[int]]:
        out: dict[Placement, list[int]] = {}
        for sid, p in sorted(self.sealed.items()):
            out.setdefault(p, []).append(sid)
        return out


class Distribution:
    def __init__(self) -> None:
        self._current = Snapshot(0, MappingProxyType({}))
        self._pins: Counter[int] = Counter()
        self._released = asyncio.Event()

    @property
    def current(self) -> Snapshot:
        return self._current

    @contextmanager
    def pinned(self) -> Iterator[Snapshot]:
        """The current snapshot, held until the block ends."""
        snap = self._current
        self._pins[snap.version] += 1
        try:
            yield snap
        finally:
            self._pins[snap.version] -= 1
            if not self._pins[snap.version]:
                del self._pins[snap.version]
                self._released.set()

    def update(self, *, add: Mapping[int, Placement] | None = None, remove: Iterable[int] = ()) -> Snapshot:
        sealed = dict(self._current.sealed)
        for sid in remove:
            sealed.pop(sid, None)
        sealed.update(add or {})
        self._current = Snapshot(self._current.version + 1, MappingProxyType(sealed))
        return self._current

    async def drained(self, version: int) -> None:
        """Return once no read holds a snapshot older than ``version``."""
        while any(v < version for v in self._pins):
            self._released.clear()
            await self._released.wait()
