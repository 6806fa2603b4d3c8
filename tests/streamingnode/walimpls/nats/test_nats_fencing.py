"""Fencing of the ``nats`` backend, looked at in the stream itself (beyond the conformance suite)."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client as NATS

from common.errors import ChannelFenced
from streamingnode.walimpls import DeliverPolicy, LogEntry, Scanner
from streamingnode.walimpls.impls.nats.layout import TermMarker
from tests.streamingnode.walimpls.nats.conftest import MakeOpener

CH = "pchannel-0"


async def _take(scanner: Scanner, n: int, timeout: float = 5.0) -> list[LogEntry]:
    out: list[LogEntry] = []
    it = aiter(scanner)
    async with asyncio.timeout(timeout):
        while len(out) < n:
            out.append(await anext(it))
    return out


async def _stream_state(raw_nats: NATS, prefix: str) -> tuple[int, int]:
    info = await raw_nats.jetstream().stream_info(f"{prefix}_{CH}")
    return info.state.messages, info.state.last_seq


async def test_a_fenced_batch_stores_nothing(make_opener: MakeOpener, raw_nats: NATS, prefix: str) -> None:
    """A refused append leaves no trace: nothing of it lands after the new marker.

    Also not a batch that needs several frames: the frames go one after the other, so
    the second is never sent (were they pipelined, each expecting ``last + i``, the
    second would find its expected sequence taken by the new marker and be stored).
    """
    old = await make_opener().open(CH, 3)
    await old.append([b"a"])  # marker at 1, frames at 2 and 3
    await old.append([b"b"])
    new = await make_opener().open(CH, 4)  # marker at 4: the old owner's next frame expects 3
    before = await _stream_state(raw_nats, prefix)
    assert before == (4, 4)
    late = [[b"late"], [b"late-%d" % i for i in range(20)], [b"x" * (3 << 20)] * 4]  # the last needs 2+ frames
    for batch in late:
        with pytest.raises(ChannelFenced, match="taken over by term 4; term 3 is fenced"):
            await old.append(batch)
    assert await _stream_state(raw_nats, prefix) == before
    ids = await new.append([b"c"])
    assert [e.payload for e in await _take(new.read(DeliverPolicy.all()), 3)] == [b"a", b"b", b"c"]
    assert ids[0].seq == 3


async def test_the_newest_marker_names_the_owner(make_opener: MakeOpener, raw_nats: NATS, prefix: str) -> None:
    first = await make_opener().open(CH, 2)
    await first.close()
    second = await make_opener().open(CH, 5)
    js = raw_nats.jetstream()
    msg = await js.get_last_msg(f"{prefix}_{CH}", f"{prefix}.{CH}.term")
    marker = TermMarker.decode(msg.data, "test")
    assert (marker.term, marker.owner) == (5, second.owner)
    with pytest.raises(ChannelFenced, match="owned by term 5, term 3 is stale"):
        await make_opener().open(CH, 3)


async def test_concurrent_opens_of_different_terms_leave_one_owner(make_opener: MakeOpener) -> None:
    """Openers racing: the older term either is refused or ends up fenced; the newest owns the channel."""
    base = await make_opener().open(CH, 1)
    await base.append([b"x"])
    results = await asyncio.gather(
        *(make_opener().open(CH, term) for term in (2, 3, 4, 5)), return_exceptions=True
    )
    opened = {term: r for term, r in zip((2, 3, 4, 5), results, strict=True) if not isinstance(r, BaseException)}
    assert all(isinstance(r, ChannelFenced) for r in results if isinstance(r, BaseException)), results
    assert 5 in opened, results
    await opened[5].append([b"by-5"])
    for term, wal in opened.items():
        if term != 5:
            with pytest.raises(ChannelFenced):
                await wal.append([b"stale"])
    with pytest.raises(ChannelFenced):
        await base.append([b"stale"])
    log = await _take(opened[5].read(DeliverPolicy.all()), 2)
    assert [e.payload for e in log] == [b"x", b"by-5"]


async def test_concurrent_opens_of_one_term_let_one_in(make_opener: MakeOpener) -> None:
    results = await asyncio.gather(*(make_opener().open(CH, 6) for _ in range(4)), return_exceptions=True)
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert all(isinstance(e, ChannelFenced) for e in losers), losers
    assert winners, results
    # Should two have slipped through (interest not yet known), the later marker wins and the other is fenced.
    survivors = 0
    for wal in winners:
        try:
            await wal.append([b"mine"])
            survivors += 1
        except ChannelFenced:
            pass
    assert survivors == 1


async def test_lost_acks_are_reconciled_without_duplicates(make_opener: MakeOpener) -> None:
    """Acks that come too late: every retry finds its earlier attempt stored, nothing lands twice."""
    wal = await make_opener(ack_timeout=0.00005).open(CH, 1)
    results = await asyncio.gather(*(wal.append([f"r{i}-a".encode(), f"r{i}-b".encode()]) for i in range(30)))
    ids = [i for r in results for i in r]
    assert wal.reconciled_count >= 1  # the retry of a stored batch came back "wrong last sequence"
    assert [i.seq for i in sorted(ids)] == list(range(1, 61))
    log = await _take(wal.read(DeliverPolicy.all()), 60)
    by_id = {e.message_id: e.payload for e in log}
    for i, r in enumerate(results):
        assert [by_id[x] for x in r] == [f"r{i}-a".encode(), f"r{i}-b".encode()]
    assert wal.last_message_id() == log[-1].message_id
    await wal.close()
    reopened = await make_opener().open(CH, 2)
    assert reopened.last_message_id() == log[-1].message_id
