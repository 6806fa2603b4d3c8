"""pchannel transitions and the placement policy (pure logic)."""

from __future__ import annotations

from coordinator.streaming.pchannel import PChannelMeta, PChannelState
from coordinator.streaming.policy import BalancePolicy, place, rebalance_move


def test_assign_bumps_term_and_records_history() -> None:
    c = PChannelMeta(name="p0")
    a = c.assign_to(1)
    assert (a.term, a.node_id, a.state, a.history) == (1, 1, PChannelState.ASSIGNING, ())
    done = a.assign_done()
    assert done.state == PChannelState.ASSIGNED
    moved = done.assign_to(2)
    assert moved.term == 2 and moved.node_id == 2
    assert [(h.term, h.node_id) for h in moved.history] == [(1, 1)]
    assert moved.assign_done().history == ()


def test_mark_unavailable_only_for_matching_term() -> None:
    c = PChannelMeta(name="p0").assign_to(1).assign_done()
    assert c.mark_unavailable(0) is c
    assert c.mark_unavailable(1).state == PChannelState.UNAVAILABLE


def test_json_round_trip() -> None:
    c = PChannelMeta(name="p0").assign_to(3).assign_done().assign_to(4)
    assert PChannelMeta.from_json(c.to_json()) == c


def test_place_spreads_over_nodes_and_keeps_placed_channels() -> None:
    chans = [PChannelMeta(name=f"p{i}") for i in range(4)]
    moves = place(chans, {1, 2})
    assert sorted(moves) == ["p0", "p1", "p2", "p3"]
    assert sorted(moves.values()).count(1) == 2 and sorted(moves.values()).count(2) == 2
    placed = [c.assign_to(moves[c.name]).assign_done() for c in chans]
    assert place(placed, {1, 2}) == {}  # nothing moves when all are placed: no flapping
    # Placement alone never moves a placed channel (joining nodes are handled by rebalance_move).
    assert place(placed, {1, 2, 3}) == {}


def test_place_moves_channels_of_a_lost_node() -> None:
    chans = [PChannelMeta(name=f"p{i}").assign_to(1 + i % 2).assign_done() for i in range(4)]
    moves = place(chans, {2})
    assert moves == {"p0": 2, "p2": 2}
    assert place(chans, set()) == {}


def test_place_redoes_interrupted_assignment_on_same_live_node() -> None:
    c = PChannelMeta(name="p0").assign_to(5)  # ASSIGNING: the coordinator died mid-step
    assert place([c], {5, 6}) == {"p0": 5}


def _placed(owners: list[int]) -> list[PChannelMeta]:
    return [PChannelMeta(name=f"p{i}").assign_to(n).assign_done() for i, n in enumerate(owners)]


def _apply(chans: list[PChannelMeta], moves: dict[str, int]) -> list[PChannelMeta]:
    return [c.assign_to(moves[c.name]).assign_done() if c.name in moves else c for c in chans]


def test_a_joining_node_gets_channels_one_move_per_cooldown() -> None:
    policy = BalancePolicy(rebalance_cooldown_seconds=10)
    chans = _placed([1, 1, 1, 1])
    first = policy.plan(chans, {1, 2}, None, now=100.0)
    assert list(first.values()) == [2]
    chans = _apply(chans, first)
    assert policy.plan(chans, {1, 2}, None, now=105.0) == {}  # cooling down
    second = policy.plan(chans, {1, 2}, None, now=110.0)
    assert list(second.values()) == [2] and set(second) != set(first)
    chans = _apply(chans, second)
    # Even now (2/2): nothing more moves, however long we wait.
    assert policy.plan(chans, {1, 2}, None, now=1000.0) == {}
    assert sorted(c.node_id for c in chans) == [1, 1, 2, 2]


def test_rebalance_moves_the_channel_with_fewest_vchannels_off_the_busiest_node() -> None:
    chans = _placed([1, 1, 1, 2])
    counts = {"p0": 5, "p1": 1, "p2": 3, "p3": 0}
    assert rebalance_move(chans, {1, 2, 3}, counts) == {"p1": 3}


def test_a_difference_of_one_is_balanced_enough() -> None:
    assert rebalance_move(_placed([1, 1, 2]), {1, 2}) == {}
    assert rebalance_move(_placed([1, 2, 3, 1]), {1, 2, 3}) == {}


def test_placement_goes_first_and_no_rebalance_while_anything_is_unplaced() -> None:
    policy = BalancePolicy(rebalance_cooldown_seconds=0)
    chans = _placed([1, 1, 1]) + [PChannelMeta(name="p3")]
    assert policy.plan(chans, {1, 2}, None, now=0.0) == {"p3": 2}
    assert rebalance_move(chans, {1, 2}) == {}


def test_rebalancing_never_oscillates() -> None:
    """From any assignment, repeated rounds reach a spread of at most one and then stop."""
    for owners in ([1] * 16, [1, 2] * 3 + [3] * 10, [4] * 5 + [1]):
        policy = BalancePolicy(rebalance_cooldown_seconds=0)
        chans = _placed(owners)
        live = {1, 2, 3, 4}
        for rnd in range(40):
            moves = policy.plan(chans, live, None, now=float(rnd))
            if not moves:
                break
            chans = _apply(chans, moves)
        else:
            raise AssertionError(f"still moving after 40 rounds from {owners}")
        counts = [sum(c.node_id == n for c in chans) for n in live]
        assert max(counts) - min(counts) <= 1, counts
        assert policy.plan(chans, live, None, now=1000.0) == {}
