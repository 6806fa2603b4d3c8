"""A three-server JetStream cluster loses a server under appends and no acknowledged record.

Three ``nats-server`` processes on 127.0.0.1 form one cluster; the channel's
stream has three replicas. A writer appends without pause and a scanner tails
the log; the server that leads the stream is SIGKILLed. Appends stall while
the other two elect a leader, then go on through the same WAL (no reopen).
Checked: every acknowledged record is in the log exactly once, in id order,
ids dense; the tailing scanner delivered all of them too; the killed server,
restarted, catches up and the cluster serves a new owner.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import nats
import pytest

from streamingnode.walimpls import DeliverPolicy, LogEntry, MessageID, Scanner, WALImpl, build_opener
from streamingnode.walimpls.impls.nats.server import NatsCluster

CH = "pchannel-0"
PREFIX = "cluster"


async def _take(scanner: Scanner, n: int, timeout: float) -> list[LogEntry]:
    out: list[LogEntry] = []
    it = aiter(scanner)
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out.append(await anext(it))
    return out


class Writer:
    """Appends two records per call until stopped; remembers what was acknowledged."""

    def __init__(self, wal: WALImpl) -> None:
        self.wal = wal
        self.acked: dict[MessageID, bytes] = {}
        self.ack_times: list[float] = []
        self.stop = asyncio.Event()

    async def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            batch = [f"rec-{i}".encode(), f"rec-{i + 1}".encode()]
            ids = await self.wal.append(batch)
            self.acked.update(zip(ids, batch, strict=True))
            self.ack_times.append(time.monotonic())
            i += 2


async def _stream_leader(url: str) -> str:
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(f"{PREFIX}_{CH}")
        assert info.cluster is not None and info.cluster.leader is not None
        return info.cluster.leader
    finally:
        await nc.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_killing_the_stream_leader_loses_no_acknowledged_record(tmp_path: Path) -> None:
    cluster = NatsCluster(tmp_path / "nats", 3)
    cluster.start()
    opener = build_opener("nats", servers=",".join(cluster.urls), replicas=3, stream_prefix=PREFIX)
    try:
        wal = await opener.open(CH, 1)
        tail = wal.read(DeliverPolicy.all())
        writer = Writer(wal)
        task = asyncio.create_task(writer.run())
        try:
            while len(writer.acked) < 500:
                await asyncio.sleep(0.02)
            leader = await _stream_leader(cluster.urls[0])
            victim = next(s for s in cluster.servers if s.name == leader)
            victim.kill()
            killed_at, acked_then = time.monotonic(), len(writer.acked)
            while len(writer.acked) < acked_then + 500:
                assert not task.done(), task.exception()
                assert time.monotonic() - killed_at < 45, "appends did not resume"
                await asyncio.sleep(0.05)
            times = [t for t in writer.ack_times if t > killed_at - 1]
            stall = max(b - a for a, b in zip(times, times[1:], strict=False))
            print(f"stream leader {leader} killed: appends stalled for {stall:.2f}s, then went on")
        finally:
            writer.stop.set()
            await task
        acked = sorted(writer.acked)
        assert [m.seq for m in acked] == list(range(1, len(acked) + 1))  # dense: nothing skipped, nothing twice
        tailed = await _take(tail, len(acked), timeout=30)
        assert [(e.message_id, e.payload) for e in tailed] == [(m, writer.acked[m]) for m in acked]

        victim.start()  # rejoins and catches up; a new owner sees the whole log
        await wal.close()
        second = build_opener("nats", servers=victim.url, replicas=3, stream_prefix=PREFIX)
        successor = await second.open(CH, 2)
        try:
            assert successor.last_message_id() == acked[-1]
            log = await _take(successor.read(DeliverPolicy.all()), len(acked), timeout=30)
            assert [e.message_id for e in log] == acked
            more = await successor.append([b"after"])
            assert more[0].seq == len(acked) + 1
        finally:
            await second.close()
    finally:
        await opener.close()
        cluster.stop()
