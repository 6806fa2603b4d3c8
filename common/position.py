"""A place in a pchannel's WAL to resume from.

``Position(message_id, timetick)``: read from ``message_id`` (inclusive) and
skip every message whose timetick is ``<= timetick``. The WAL writes in
timetick order, so a position says exactly "everything up to timetick T is
accounted for" (in object storage, for a checkpoint), and resuming from it
sees every later message once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Position:
    message_id: bytes
    timetick: int

    def to_dict(self) -> dict[str, Any]:
        return {"message_id": self.message_id.hex(), "timetick": self.timetick}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Position:
        return Position(bytes.fromhex(d["message_id"]), int(d["timetick"]))

    def covers(self, timetick: int) -> bool:
        """True if a message with ``timetick`` is already accounted for (resuming skips it)."""
        return timetick <= self.timetick
