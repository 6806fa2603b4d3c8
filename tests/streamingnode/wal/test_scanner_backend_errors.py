"""The switchable scanner over a failing backend (a fake): backoff, restart position, exactly-once, end."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from common.errors import StrataError, WALClosed
from common.message import TimeTick
from protos.common_pb2 import Message, MessageType
from streamingnode.wal.scanner import Backoff, SwitchableScanner
from streamingnode.walimpls.wal import DeliverPolicy, DeliverPolicyKind, LogEntry, MessageID


def build_log(batches: int, per_batch: int) -> list[Message]:
    """A log as the WAL writes it: a first tick, then batches each closed by a tick."""
    ts = 100
    log = [TimeTick(timetick=ts).encode()]
    last_tick_id = 1
    for _ in range(batches):
        for _ in range(per_batch):
            ts += 1
            log.append(Message(type=MessageType.INSERT, vchannel="v0", timetick=ts,
                               last_confirmed=MessageID(last_tick_id).to_bytes()))
        ts += 1
        log.append(TimeTick(timetick=ts).encode())
        log[-1].last_confirmed = MessageID(last_tick_id).to_bytes()
        last_tick_id = len(log)
    return log


class FakeScanner:
    def __init__(self, owner: FakeImpl, start: int, fail_after: int | None) -> None:
        self._owner = owner
        self._next = start  # index into the log
        self._left = fail_after
        self.closed = False

    def __aiter__(self) -> AsyncIterator[LogEntry]:
        return self

    async def __anext__(self) -> LogEntry:
        if self.closed:
            raise StopAsyncIteration
        if self._left is not None:
            if self._left == 0:
                raise StrataError("backend read failed")
            self._left -= 1
        while self._next >= len(self._owner.log):
            if self.closed or self._owner.closed:
                raise StopAsyncIteration
            await asyncio.sleep(0.01)
        i = self._next
        self._next += 1
        return LogEntry(MessageID(i + 1), self._owner.log[i].SerializeToString())

    async def close(self) -> None:
        self.closed = True


class FakeImpl:
    """A WALImpl whose ``read`` follows a plan: per call, fail to open, fail after n entries, or work."""

    channel = "p0"
    term = 1

    def __init__(self, log: list[Message], plan: Sequence[str | int | None]) -> None:
        self.log = log
        self.plan = list(plan)
        self.policies: list[DeliverPolicy] = []
        self.scanners: list[FakeScanner] = []
        self.closed = False

    def read(self, policy: DeliverPolicy) -> FakeScanner:
        self.policies.append(policy)
        step = self.plan.pop(0) if self.plan else None
        if step == "closed":
            raise WALClosed("closed")
        if step == "down":
            raise StrataError("backend unavailable")
        assert not isinstance(step, str)
        start = 0
        if policy.message_id is not None:
            start = policy.message_id.seq - 1 + (policy.kind == DeliverPolicyKind.START_AFTER)
        scanner = FakeScanner(self, start, step)
        self.scanners.append(scanner)
        return scanner

    def last_message_id(self) -> MessageID | None:
        return MessageID(len(self.log)) if self.log else None

    def first_message_id(self) -> MessageID | None:
        return MessageID(1) if self.log else None

    async def append(self, payloads: Sequence[bytes]) -> list[MessageID]:
        raise NotImplementedError

    async def truncate(self, message_id: MessageID) -> None:
        pass

    async def close(self) -> None:
        self.closed = True


class RecordingSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def take(scanner: SwitchableScanner, n: int) -> list[tuple[MessageID, Message]]:
    out = []
    async with asyncio.timeout(5):
        async for item in scanner:
            out.append(item)
            if len(out) == n:
                break
    return out


async def test_failures_back_off_from_100ms_doubling_to_5s_then_deliver() -> None:
    log = build_log(2, 2)
    impl = FakeImpl(log, ["down"] * 9)
    sleep = RecordingSleep()
    scanner = SwitchableScanner(impl=impl, buffer=None, policy=DeliverPolicy.all(), sleep=sleep)
    got = await take(scanner, len(log))
    assert sleep.delays == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0]
    assert [m for _, m in got] == log
    assert scanner.stats.backend_errors == 9


async def test_mid_stream_failures_restart_at_last_confirmed_without_duplicates() -> None:
    log = build_log(6, 3)
    # Each scanner fails after a few entries; the backoff resets after progress.
    impl = FakeImpl(log, [2, 3, 5, 1, 4, 0, 6])
    sleep = RecordingSleep()
    scanner = SwitchableScanner(impl=impl, buffer=None, policy=DeliverPolicy.all(), sleep=sleep)
    got = await take(scanner, len(log))
    assert [m for _, m in got] == log
    assert [mid.seq for mid, _ in got] == list(range(1, len(log) + 1))
    assert scanner.stats.dropped > 0  # restarts re-read what was delivered
    # Restarts go to the last consumed message's last_confirmed.
    assert impl.policies[0] == DeliverPolicy.all()
    for policy in impl.policies[1:]:
        assert policy.kind == DeliverPolicyKind.START_FROM
    assert sleep.delays == [0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.1]
    assert all(s.closed for s in impl.scanners[:-1])


async def test_a_stale_write_below_a_delivered_tick_is_dropped() -> None:
    log = build_log(2, 1)
    late = Message(type=MessageType.INSERT, vchannel="v0", timetick=50)
    log.insert(3, late)  # after the first batch's tick
    scanner = SwitchableScanner(impl=FakeImpl(log, []), buffer=None, policy=DeliverPolicy.all(), vchannel="v0")
    got = await take(scanner, len(log) - 1)
    assert late not in [m for _, m in got]
    assert scanner.stats.dropped == 1


async def test_the_wal_closing_ends_a_failing_scanner_without_retrying() -> None:
    log = build_log(1, 1)
    closing = False
    impl = FakeImpl(log, [1])
    sleep = RecordingSleep()

    def is_closing() -> bool:
        return closing

    scanner = SwitchableScanner(
        impl=impl, buffer=None, policy=DeliverPolicy.all(), is_closing=is_closing, sleep=sleep
    )
    it = aiter(scanner)
    assert (await anext(it))[1] == log[0]
    closing = True
    with pytest.raises(StopAsyncIteration):
        await anext(it)
    assert sleep.delays == [] and len(impl.policies) == 1


async def test_a_closed_backend_ends_the_scanner() -> None:
    impl = FakeImpl(build_log(1, 1), ["closed"])
    scanner = SwitchableScanner(impl=impl, buffer=None, policy=DeliverPolicy.all())
    assert [item async for item in scanner] == []
    with pytest.raises(RuntimeError):
        aiter(scanner)


async def test_a_backend_scanner_ending_while_the_wal_is_open_is_restarted() -> None:
    log = build_log(2, 1)
    impl = FakeImpl(log, [])
    sleep = RecordingSleep()
    scanner = SwitchableScanner(impl=impl, buffer=None, policy=DeliverPolicy.all(), sleep=sleep)
    it = aiter(scanner)
    assert (await anext(it))[1] == log[0]
    await impl.scanners[0].close()  # ends on its own, but the WAL is not closing
    rest = [(await anext(it))[1] for _ in range(len(log) - 1)]
    assert rest == log[1:] and sleep.delays == [0.1]


def test_backoff_options_are_validated() -> None:
    with pytest.raises(StrataError):
        Backoff(initial=0).validate()
    assert Backoff().next(None) == 0.1 and Backoff().next(4.0) == 5.0
