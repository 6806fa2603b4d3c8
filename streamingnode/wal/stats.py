"""Rows per collection, folded from the WAL's messages: the statistics ``GetCollectionRows`` answers.

``RowCounts`` is an observer of the WAL (``interceptors.Observer``): the WAL feeds it every
message it persists or replays, typed (the writer passes on the typed forms the append came with), and keeps
the counts in its recovery snapshots; the counting itself lives here, outside the writer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from common.message import DropCollection, Insert, TypedMessage


class RowCounts:
    """Rows inserted per collection (a dropped collection's count is forgotten)."""

    def __init__(self, rows: Mapping[int, int] | None = None) -> None:
        self._rows: defaultdict[int, int] = defaultdict(int, rows or {})

    def restore(self, rows: Mapping[int, int]) -> None:
        """Start again from the counts of a recovery snapshot."""
        self._rows = defaultdict(int, rows)

    def observe(self, msg: TypedMessage) -> None:
        match msg:
            case Insert(collection_id=cid, rows=rows):
                self._rows[cid] += rows
            case DropCollection(collection_id=cid):
                self._rows.pop(cid, None)
            case _:
                pass

    def of(self, collection_id: int) -> int:
        return self._rows.get(collection_id, 0)

    def snapshot(self) -> dict[int, int]:
        """The counts now, for a recovery snapshot."""
        return dict(self._rows)
