"""Rows per collection, folded from the WAL's messages: the statistics ``GetCollectionRows`` answers.

The WAL feeds every message it persists or replays to ``RowCounts.observe`` and keeps the counts
in its recovery snapshots; the counting itself lives here, outside the writer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from common.message import DropCollection, Insert, TypedMessage


class RowCounts:
    """Rows inserted per collection (a dropped collection's count is forgotten)."""

    def __init__(self, rows: Mapping[int, int] | None = None) -> None:
        self._rows: defaultdict[int, int] = defaultdict(int, rows or {})

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
