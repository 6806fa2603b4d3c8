"""A storm of concurrent opens and removes: the state machine converges and steps never overlap."""

from __future__ import annotations

import asyncio
import random

import pytest
import structlog

from common.errors import ChannelFenced, IgnoredOperation, UnmatchedChannelTerm
from streamingnode.walmanager.lifetime import WALLifetime
from streamingnode.walmanager.state import WALState
from tests.streamingnode.walmanager.fakes import FakeFactory, random_delay

OPS = 300
TERMS = 10
FAILING_TERM = 7
EXPECTED_ERRORS = (IgnoredOperation, UnmatchedChannelTerm, ChannelFenced)


def _check_history(factory: FakeFactory, pchannel: str) -> None:
    """Terms open in increasing order, each at most once, and each WAL closes before the next opens."""
    opened = factory.opened_terms(pchannel)
    assert opened == sorted(set(opened)), opened
    open_term: int | None = None
    for kind, channel, term in factory.events:
        if channel != pchannel:
            continue
        if kind == "open":
            assert open_term is None, f"term {term} opened while term {open_term} was open"
            if term not in factory.fail:
                open_term = term
        else:
            assert open_term == term
            open_term = None


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_storm_converges_to_the_latest_expected_state(seed: int) -> None:
    rng = random.Random(seed)
    factory = FakeFactory(delay=random_delay(rng, 0.003), fail={FAILING_TERM: ChannelFenced("fenced")})
    outcomes: dict[str, int] = {}
    targets: list[WALState] = []

    async def one(lt: WALLifetime, op: str, term: int, pause: float, cancel_after: float | None) -> None:
        await asyncio.sleep(pause)
        targets.append(WALState(term, op == "open"))
        call = asyncio.ensure_future(getattr(lt, op)(term))
        if cancel_after is not None:
            await asyncio.sleep(cancel_after)
            call.cancel()
        try:
            await call
            outcome = "ok"
        except EXPECTED_ERRORS as err:
            outcome = type(err).__name__
        except asyncio.CancelledError:
            outcome = "cancelled"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome == "ok" and op == "open":
            assert term != FAILING_TERM

    with structlog.testing.capture_logs() as logs:
        lt = WALLifetime("p0", factory)
        try:
            async with asyncio.timeout(10):
                async with asyncio.TaskGroup() as tg:
                    for i in range(OPS):
                        # Terms drift upwards over the storm, with neighbours racing each other.
                        term = min(TERMS, max(1, 1 + i * TERMS // OPS + rng.randint(-1, 1)))
                        op = rng.choice(["open", "open", "remove"])
                        pause = i * 0.0003 + rng.uniform(0, 0.01)
                        cancel_after = rng.uniform(0, 0.002) if rng.random() < 0.3 else None
                        tg.create_task(one(lt, op, term, pause, cancel_after))
                # Cancelled callers do not wait: let the worker catch up with the last request.
                while lt.current.before(lt.expected):
                    await asyncio.sleep(0.001)
            latest = max(targets, key=WALState.order_key)
            assert lt.expected == latest
            assert lt.current.same_position(latest)
            open_wals = factory.open_wals.get("p0", [])
            if lt.current.available:
                assert [w.term for w in open_wals] == [latest.term]
                assert lt.available_wal(latest.term).term == latest.term
            else:
                assert open_wals == []
        finally:
            await asyncio.wait_for(lt.close(), 5)
    assert factory.overlaps == 0
    assert factory.max_open == 1
    _check_history(factory, "p0")
    # The storm did move through terms: the requests spanned them (fixed by the seed), and the
    # worker opened several. How many it opens depends on timing (under load it rightly skips
    # terms that were already superseded), so that count is not pinned.
    assert len({t.term for t in targets}) >= TERMS // 2
    assert len(factory.opened_terms()) >= 2
    assert factory.open_wals["p0"] == []
    assert sum(outcomes.values()) == OPS
    assert outcomes.get("ok", 0) > 0 and outcomes.get("IgnoredOperation", 0) > 0
    assert not [e for e in logs if e["event"] == "wal lifetime step failed"]


async def test_storm_over_several_pchannels_keeps_them_independent() -> None:
    from streamingnode.walmanager.manager import WALManager

    rng = random.Random(11)
    factory = FakeFactory(delay=random_delay(rng, 0.002))
    manager = WALManager(None, None, wal_factory=factory)  # type: ignore[arg-type]  # the factory replaces both
    channels = ["p0", "p1", "p2"]
    latest: dict[str, WALState] = {}

    async def one(ch: str, op: str, term: int, pause: float) -> None:
        await asyncio.sleep(pause)
        target = WALState(term, op == "open")
        if ch not in latest or latest[ch].before(target):
            latest[ch] = target
        try:
            await getattr(manager, op)(ch, term)
        except EXPECTED_ERRORS:
            pass

    try:
        async with asyncio.timeout(10):
            async with asyncio.TaskGroup() as tg:
                for i in range(150):
                    ch = rng.choice(channels)
                    op = rng.choice(["open", "remove"])
                    term = min(TERMS, max(1, 1 + i * TERMS // 150 + rng.randint(-1, 1)))
                    tg.create_task(one(ch, op, term, i * 0.0003 + rng.uniform(0, 0.01)))
        states = {s.pchannel: s for s in manager.states()}
        for ch in channels:
            assert (states[ch].term, states[ch].available) == (latest[ch].term, latest[ch].available)
            _check_history(factory, ch)
    finally:
        await asyncio.wait_for(manager.close(), 5)
    assert all(wals == [] for wals in factory.open_wals.values())
