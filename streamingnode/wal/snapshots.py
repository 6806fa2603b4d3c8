"""Recovery snapshots of one WAL: restored and replayed on open, captured by the writer, saved in the background.

A snapshot is captured between two writer batches, the only moments when the folded state
(segments, rows) matches a log position exactly; a background task saves it (``recovery.py``
stores it in etcd, fenced by term).
"""

from __future__ import annotations

import asyncio

from common.errors import (
    ChannelFenced,
    StrataError,
)
from common.message import decode
from common.tsoutil import physical_ms
from protos.common_pb2 import Message
from streamingnode.shard import ShardManager
from streamingnode.wal.recovery import RecoverySnapshot
from streamingnode.wal.state import WALState
from streamingnode.walimpls.wal import DeliverPolicy, MessageID


class Snapshots(WALState):
    """The WAL's recovery snapshots and the replay after one."""

    def _restore(self, snap: RecoverySnapshot) -> None:
        self._rows.restore(snap.rows)
        if self._shard is not None and snap.shard is not None:
            self._shard.manager = ShardManager.from_snapshot(snap.shard, self._shard.manager.policy)

    def _capture(self) -> RecoverySnapshot:
        """The folded state now; only call between two writer batches (no reservation in flight)."""
        assert self._folded is not None
        return RecoverySnapshot(
            position=self._folded,
            term=self.term,
            rows=self._rows.snapshot(),
            shard=None if self._shard is None else self._shard.manager.snapshot(),
        )

    def _maybe_capture(self) -> None:
        if self._recovery is None or self._folded is None or self._folded == self._saved:
            return
        if self._clock() - self._captured_at < self._snapshot_interval:
            return
        self._captured = self._capture()
        self._captured_at = self._clock()
        self._snapshot_wake.set()

    async def _save_loop(self) -> None:
        assert self._recovery is not None
        while True:
            await self._snapshot_wake.wait()
            self._snapshot_wake.clear()
            snap, self._captured = self._captured, None
            if snap is None:
                continue
            try:
                await self._recovery.save(snap)
                self._saved = snap.position
            except asyncio.CancelledError:
                raise
            except ChannelFenced:
                self._log.error("recovery snapshot fenced: a newer owner has this pchannel")
                return
            except Exception as err:  # task boundary: the next capture tries again
                self._log.warning("recovery snapshot not saved", error=str(err))

    async def _replay(self, after: MessageID | None) -> None:
        last = self.impl.last_message_id()
        if after is not None and (last is None or after > last):
            raise StrataError(
                f"recovery snapshot of {self.channel} is at {after.seq}, past the end of the log "
                f"({None if last is None else last.seq}): the WAL directory does not match etcd"
            )
        if last is None or (after is not None and after >= last):
            return
        policy = DeliverPolicy.all() if after is None else DeliverPolicy.start_after(after)
        self.check_start(policy)
        scanner = self.impl.read(policy)
        try:
            async for entry in scanner:
                msg = Message.FromString(entry.payload)
                typed = decode(msg)
                self._observe(typed)
                self._chain.replayed(typed, physical_ms(msg.timetick))
                if entry.message_id >= last:
                    break
        finally:
            await scanner.close()
