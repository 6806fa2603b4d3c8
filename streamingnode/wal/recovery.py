"""Recovery snapshots: how a WAL reopens without replaying its whole log.

The WAL folds every message into in-memory state (the shard manager's growing
segments, rows per collection). Once the log is truncated that state cannot be
rebuilt from the log alone, so the WAL saves it now and then, together with
the position it describes (the last message folded in). On open it restores
the newest snapshot and replays only what follows; truncation never passes the
saved position (``WAL.truncate``).

Snapshots live in etcd at ``streamingnode/wal/<pchannel>/recovery``. Every save
is a compare-and-swap on the key's version as this WAL last saw it, and a WAL
saves once right after it opens: from then on an older owner of the pchannel
(a frozen node at an older term) can no longer overwrite it (``ChannelFenced``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from common.errors import ChannelFenced
from common.etcd.metastore import MetaStore
from common.position import Position
from streamingnode.shard.codec import snapshot_from_dict, snapshot_to_dict
from streamingnode.shard.manager import ShardSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class RecoverySnapshot:
    """The WAL's folded state after the message at ``position`` (and nothing later)."""

    position: Position
    term: int
    rows: dict[int, int] = field(default_factory=dict)
    shard: ShardSnapshot | None = None

    def to_json(self) -> bytes:
        d: dict[str, Any] = {
            "position": self.position.to_dict(),
            "term": self.term,
            "rows": {str(k): v for k, v in self.rows.items()},
            "shard": None if self.shard is None else snapshot_to_dict(self.shard),
        }
        return json.dumps(d).encode()

    @staticmethod
    def from_json(raw: bytes) -> RecoverySnapshot:
        d = json.loads(raw)
        return RecoverySnapshot(
            position=Position.from_dict(d["position"]),
            term=int(d["term"]),
            rows={int(k): int(v) for k, v in d["rows"].items()},
            shard=None if d["shard"] is None else snapshot_from_dict(d["shard"]),
        )


class RecoveryHandle(Protocol):
    """One WAL's access to its pchannel's snapshot; ``load`` first, then ``save`` as often as needed."""

    async def load(self) -> RecoverySnapshot | None: ...

    async def save(self, snapshot: RecoverySnapshot) -> None:
        """Store ``snapshot``; ``ChannelFenced`` if anyone else saved since this handle's last load/save."""
        ...


class RecoveryStore(Protocol):
    def handle(self, pchannel: str) -> RecoveryHandle: ...


class EtcdRecoveryStore:
    def __init__(self, store: MetaStore) -> None:
        self._store = store

    def handle(self, pchannel: str) -> RecoveryHandle:
        return _EtcdHandle(self._store, f"streamingnode/wal/{pchannel}/recovery", pchannel)


class _EtcdHandle:
    def __init__(self, store: MetaStore, key: str, pchannel: str) -> None:
        self._store = store
        self._key = key
        self._pchannel = pchannel
        self._version = 0

    async def load(self) -> RecoverySnapshot | None:
        raw, self._version = await self._store.get_versioned(self._key)
        return None if raw is None else RecoverySnapshot.from_json(raw)

    async def save(self, snapshot: RecoverySnapshot) -> None:
        if not await self._store.put_if_version(self._key, snapshot.to_json(), self._version):
            raise ChannelFenced(
                f"recovery snapshot of {self._pchannel} was written by another owner; term {snapshot.term} is fenced"
            )
        self._version += 1


class MemoryRecoveryStore:
    """In-process snapshots with the same fencing (tests, embedded runs without etcd)."""

    def __init__(self) -> None:
        self.saved: dict[str, tuple[RecoverySnapshot, int]] = {}

    def handle(self, pchannel: str) -> RecoveryHandle:
        return _MemoryHandle(self, pchannel)


class _MemoryHandle:
    def __init__(self, owner: MemoryRecoveryStore, pchannel: str) -> None:
        self._owner = owner
        self._pchannel = pchannel
        self._version = 0

    async def load(self) -> RecoverySnapshot | None:
        entry = self._owner.saved.get(self._pchannel)
        self._version = 0 if entry is None else entry[1]
        return None if entry is None else entry[0]

    async def save(self, snapshot: RecoverySnapshot) -> None:
        entry = self._owner.saved.get(self._pchannel)
        if (0 if entry is None else entry[1]) != self._version:
            raise ChannelFenced(f"recovery snapshot of {self._pchannel} was written by another owner")
        self._version += 1
        self._owner.saved[self._pchannel] = (snapshot, self._version)
