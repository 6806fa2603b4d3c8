"""Hypothesis state machine: live decisions vs a replay of the log they wrote.

Random DDL, inserts (some into unknown collections or dropped partitions),
manual flushes, clock ticks and restarts drive a ``LogWriter``. After every
step a manager rebuilt from the log by ``observe`` must equal the live one,
the log must follow the protocol (CreateSegment before a segment's inserts,
none after its Flush) and every insert must respect the caps.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from common.errors import CollectionNotFound, InvalidArgument
from common.message import CreateSegment, Flush, Insert
from streamingnode.shard import SealPolicy, SealReason, SegmentState
from streamingnode.shard.codec import snapshot_from_dict, snapshot_to_dict
from tests.streamingnode.shard.writer import LogWriter, replay

POLICY = SealPolicy(max_rows=10, max_bytes=100, max_lifetime_ms=600, max_idle_ms=250)
COLLECTIONS = st.sampled_from([1, 2, 3])
VCHANNELS = st.sampled_from(["v0", "v1", "v2"])
ROWS = st.integers(1, 14)
BYTES = st.integers(0, 70)
PARTITIONS = st.sampled_from([10, 11])


class ShardMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.w = LogWriter(POLICY)
        self.on: dict[int, set[str]] = defaultdict(set)  # model: collection -> vchannels
        self.dropped: dict[int, set[int]] = defaultdict(set)  # model: collection -> dropped partitions
        self.flush_ts = 0
        self.create(1, "v0")

    # -- operations ------------------------------------------------------------

    @rule(cid=COLLECTIONS, vch=VCHANNELS)
    def create(self, cid: int, vch: str) -> None:
        self.w.create_collection(cid, [vch])
        self.on[cid].add(vch)

    @rule(cid=COLLECTIONS, vch=VCHANNELS)
    def drop(self, cid: int, vch: str) -> None:
        seals = self.w.drop_collection(cid, vch)
        assert all((s.collection_id, s.vchannel) == (cid, vch) for s in seals)
        assert all(s.reason is SealReason.COLLECTION_DROPPED for s in seals)
        self.on[cid].discard(vch)
        if not self.on[cid]:
            self.dropped.pop(cid, None)

    @rule(cid=COLLECTIONS, pid=PARTITIONS, vch=VCHANNELS)
    def drop_partition(self, cid: int, pid: int, vch: str) -> None:
        """A DropPartition broadcast to every vchannel of the collection (``vch`` if it has none)."""
        for v in sorted(self.on[cid]) or [vch]:
            seals = self.w.drop_partition(cid, pid, v)
            assert all((s.collection_id, s.partition_id, s.vchannel) == (cid, pid, v) for s in seals)
        if self.on[cid]:
            self.dropped[cid].add(pid)

    @rule(
        cid=COLLECTIONS,
        vch=VCHANNELS,
        pid=PARTITIONS,
        rows=ROWS,
        nbytes=BYTES,
    )
    def insert(self, cid: int, vch: str, pid: int, rows: int, nbytes: int) -> None:
        before = len(self.w.log)
        if vch not in self.on[cid]:
            with pytest.raises(CollectionNotFound):
                self.w.insert(vch, cid, pid, rows, nbytes)
        elif pid in self.dropped[cid]:
            with pytest.raises(InvalidArgument):
                self.w.insert(vch, cid, pid, rows, nbytes)
        else:
            sid = self.w.insert(vch, cid, pid, rows, nbytes)
            seg = self.w.manager.segment(sid)
            assert seg is not None and seg.key == (vch, cid, pid)
            added = [e.type for e in self.w.log[before:]]
            event(f"insert appended {len(added)} message(s)")  # 1: same segment, 2: new, 3: rollover
            return
        event("insert refused")
        assert len(self.w.log) == before  # a refused insert appends nothing

    @precondition(lambda self: any(self.on.values()))
    @rule(data=st.data(), pid=PARTITIONS, rows=ROWS, nbytes=BYTES)
    def insert_known(self, data: st.DataObject, pid: int, rows: int, nbytes: int) -> None:
        """Inserts into a collection that exists: most inserts of a real workload."""
        cid, vch = data.draw(st.sampled_from(sorted((c, v) for c, vs in self.on.items() for v in vs)))
        self.insert(cid, vch, pid, rows, nbytes)

    @rule(cid=COLLECTIONS, vch=VCHANNELS)
    def manual_flush(self, cid: int, vch: str) -> None:
        self.flush_ts += 1
        if vch not in self.on[cid]:
            with pytest.raises(CollectionNotFound):
                self.w.manual_flush(cid, vch, self.flush_ts)
            return
        self.w.manual_flush(cid, vch, self.flush_ts)
        assert not any(s.collection_id == cid and s.vchannel == vch for s in self.w.manager.snapshot().segments)

    @rule(advance=st.integers(0, 200))
    def tick(self, advance: int) -> None:
        for seal in self.w.tick(advance):
            event(f"tick sealed: {seal.reason.value}")

    @rule(cut=st.integers(0, 1_000))
    def restart(self, cut: int) -> None:
        """The live manager is replaced by one rebuilt from a snapshot at ``cut`` plus the rest of the log."""
        cut %= len(self.w.log) + 1
        head = replay(POLICY, self.w.log[:cut]).snapshot()
        self.w.manager = replay(POLICY, self.w.log[cut:], start=head)

    # -- invariants ------------------------------------------------------------

    @invariant()
    def replay_equals_live(self) -> None:
        live = self.w.manager
        assert replay(POLICY, self.w.log).snapshot() == live.snapshot()
        assert live.pending_seals() == []

    @invariant()
    def a_stored_snapshot_plus_the_rest_of_the_log_equals_live(self) -> None:
        """What a WAL open does after truncation: restore the JSON snapshot, replay what follows."""
        log = self.w.log
        cut = len(log) // 2
        stored = json.loads(json.dumps(snapshot_to_dict(replay(POLICY, log[:cut]).snapshot())))
        assert replay(POLICY, log[cut:], snapshot_from_dict(stored)).snapshot() == self.w.manager.snapshot()

    @invariant()
    def one_open_segment_per_key(self) -> None:
        snap = self.w.manager.snapshot()
        growing = snap.growing()
        assert all(s.state is SegmentState.GROWING for s in snap.segments)
        assert sorted(s.segment_id for s in growing) == list(snap.open_segments)
        assert len({s.key for s in growing}) == len(growing)
        assert all(s.vchannel in self.on[s.collection_id] for s in growing)
        assert all(s.partition_id not in self.dropped[s.collection_id] for s in growing)

    @invariant()
    def log_follows_the_protocol_and_the_caps(self) -> None:
        created: set[int] = set()
        flushed: set[int] = set()
        rows: dict[int, int] = defaultdict(int)
        nbytes: dict[int, int] = defaultdict(int)
        for e in self.w.log:
            match e.message:
                case CreateSegment(segment_id=sid):
                    assert sid not in created
                    created.add(sid)
                case Flush(segment_id=sid):
                    assert sid in created and sid not in flushed
                    flushed.add(sid)
                case Insert(segment_id=int(sid), rows=n, nbytes=size):
                    assert sid in created and sid not in flushed
                    if rows[sid] > 0:  # only the first insert of a segment may pass a cap
                        assert rows[sid] + n <= POLICY.max_rows
                        assert nbytes[sid] + size <= POLICY.max_bytes
                    rows[sid] += n
                    nbytes[sid] += size
                case Insert():
                    raise AssertionError("an insert without a segment")
        for seg in self.w.manager.snapshot().segments:
            assert (seg.rows, seg.bytes) == (rows[seg.segment_id], nbytes[seg.segment_id])


ShardMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestShardRecovery = ShardMachine.TestCase
