"""pchannel metadata as stored at ``streamingcoord/pchannel/<name>``.

Legal transitions (the term only grows and is persisted before any node hears of it):

* UNINITIALIZED/ASSIGNED/UNAVAILABLE --assign_to(node)--> ASSIGNING (term+1, old owner in history)
* ASSIGNING --assign_done()--> ASSIGNED (history cleared)
* ASSIGNED --mark_unavailable(term)--> UNAVAILABLE (only if the term matches)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from enum import Enum


class PChannelState(str, Enum):
    UNINITIALIZED = "UNINITIALIZED"
    ASSIGNING = "ASSIGNING"
    ASSIGNED = "ASSIGNED"
    UNAVAILABLE = "UNAVAILABLE"


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryEntry:
    term: int
    node_id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PChannelMeta:
    name: str
    term: int = 0
    node_id: int = 0
    state: PChannelState = PChannelState.UNINITIALIZED
    history: tuple[HistoryEntry, ...] = field(default_factory=tuple)

    def assign_to(self, node_id: int) -> PChannelMeta:
        history = list(self.history)
        if self.node_id:
            history = [h for h in history if h.node_id != self.node_id]
            history.append(HistoryEntry(term=self.term, node_id=self.node_id))
        return replace(
            self, term=self.term + 1, node_id=node_id, state=PChannelState.ASSIGNING, history=tuple(history)
        )

    def assign_done(self) -> PChannelMeta:
        return replace(self, state=PChannelState.ASSIGNED, history=())

    def mark_unavailable(self, term: int) -> PChannelMeta:
        if self.state != PChannelState.ASSIGNED or self.term != term:
            return self
        return replace(self, state=PChannelState.UNAVAILABLE)

    def to_json(self) -> bytes:
        d = asdict(self)
        d["state"] = self.state.value
        return json.dumps(d).encode()

    @staticmethod
    def from_json(raw: bytes) -> PChannelMeta:
        d = json.loads(raw)
        d["state"] = PChannelState(d["state"])
        d["history"] = tuple(HistoryEntry(**h) for h in d["history"])
        return PChannelMeta(**d)
