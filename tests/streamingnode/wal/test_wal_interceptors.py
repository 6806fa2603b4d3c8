"""The writer's interceptor chain: links run in order, each on what the one before it left; a
refusal undoes the links before it; a failed persist aborts every link, the last first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pyarrow as pa
import pytest

from common import failpoints
from common.errors import CollectionNotFound, DiskQuotaExhausted, MalformedMessage
from common.message import CreateSegment, Insert, TypedMessage, decode
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.interceptors import Expansion, Outgoing
from streamingnode.wal.wal import WAL
from streamingnode.walimpls.wal import DeliverPolicy
from tests.streamingnode.fakes import CountingAllocator
from tests.streamingnode.wal.opened import local_wal

pytestmark = [pytest.mark.timeout(30), pytest.mark.usefixtures("disarmed")]

Journal = list[tuple[str, str]]


class Link:
    """A fake link: writes a CreateSegment of its own before every append (segment ``mark``),
    assigns the caller's Inserts to ``mark``, and records what it was told."""

    def __init__(self, name: str, mark: int, journal: Journal, *, refuse: str | None = None) -> None:
        self.name, self.mark, self.journal, self.refuse = name, mark, journal, refuse
        self.saw: list[int | None] = []  # the segment of each Insert it was given
        self.expansions: list[Expansion] = []

    async def expand(self, messages: Sequence[Outgoing], now_ms: int) -> Expansion:
        self.journal.append((self.name, "expand"))
        own = []
        for out in messages:
            assert isinstance(out.typed, Insert)
            if out.typed.vchannel == self.refuse:
                raise CollectionNotFound(f"{self.name} refuses {out.typed.vchannel}")
            self.saw.append(out.typed.segment_id)
            typed = out.typed.assigned(self.mark)
            out.msg.header = typed.header()
            own.append(Outgoing(out.msg, typed))
        made = CreateSegment(vchannel="v0", collection_id=1, partition_id=2, segment_id=self.mark)
        ex = Expansion(pre=[Outgoing.of(made)], own=own)
        self.expansions.append(ex)
        return ex

    def _heard(self, what: str, ex: Expansion) -> None:
        assert ex is self.expansions[-1], "a link hears about the expansion it made"
        self.journal.append((self.name, what))

    def committed(self, ex: Expansion, now_ms: int) -> None:
        self._heard("committed", ex)

    def aborted(self, ex: Expansion) -> None:
        self._heard("aborted", ex)

    def refused(self, ex: Expansion) -> None:
        self._heard("refused", ex)

    def tick(self, now_ms: int) -> Expansion:
        return Expansion()

    def replayed(self, msg: TypedMessage, timetick_ms: int) -> None:
        pass


@pytest.fixture()
def journal() -> Journal:
    return []


@pytest.fixture()
def links(journal: Journal) -> tuple[Link, Link]:
    return Link("a", 11, journal), Link("b", 22, journal, refuse="v-refused")


@pytest.fixture()
async def wal(tmp_path: Path, links: tuple[Link, Link]) -> AsyncIterator[WAL]:
    async with local_wal(tmp_path, CountingAllocator(1000), tick_interval=0.05, interceptors=links) as w:
        yield w


def _insert(vchannel: str = "v0") -> Message:
    table = pa.table({"id": pa.array([1, 2], pa.int64())})
    return Insert.of(vchannel=vchannel, collection_id=1, partition_id=2, table=table).encode()


async def _log(wal: WAL) -> list[TypedMessage]:
    out: list[TypedMessage] = []
    last = wal.impl.last_message_id()
    async for mid, msg in wal.read(DeliverPolicy.all()):
        if msg.type != MessageType.TIME_TICK:
            out.append(decode(msg))
        if last is not None and mid >= last:
            break
    return out


async def test_links_run_in_order_on_what_the_previous_left(
    wal: WAL, links: tuple[Link, Link], journal: Journal
) -> None:
    a, b = links
    await wal.append([_insert()])
    assert a.saw == [None] and b.saw == [11]  # b plans the Insert as a assigned it
    log = [(type(m), m.segment_id) for m in await _log(wal) if isinstance(m, CreateSegment | Insert)]
    assert log == [(CreateSegment, 11), (CreateSegment, 22), (Insert, 22)]  # a's own message first
    assert journal == [("a", "expand"), ("b", "expand"), ("a", "committed"), ("b", "committed")]


async def test_a_refusal_undoes_the_links_before_it_and_fails_that_append_alone(
    wal: WAL, links: tuple[Link, Link], journal: Journal
) -> None:
    refused, accepted = await asyncio.gather(
        wal.append([_insert("v-refused")]), wal.append([_insert()]), return_exceptions=True
    )
    assert isinstance(refused, CollectionNotFound)
    assert not isinstance(accepted, BaseException)
    assert ("a", "refused") in journal and ("b", "refused") not in journal  # b cleaned up itself
    log = await _log(wal)
    assert [m.vchannel for m in log if isinstance(m, Insert)] == ["v0"]  # nothing of the refused one

    journal.clear()
    with pytest.raises(MalformedMessage):  # decoded before any link plans it
        await wal.append([Message(type=MessageType.INSERT, vchannel="v0", header=b"[]")])
    assert journal == []


async def test_a_failed_persist_aborts_every_link_last_first(
    wal: WAL, links: tuple[Link, Link], journal: Journal
) -> None:
    failpoints.arm("wal.local.write=ENOSPC")
    with pytest.raises(DiskQuotaExhausted):
        await wal.append([_insert()])
    assert journal == [("a", "expand"), ("b", "expand"), ("b", "aborted"), ("a", "aborted")]
