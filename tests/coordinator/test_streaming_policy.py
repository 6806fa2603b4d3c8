"""pchannel transitions and the placement policy (pure logic)."""

from __future__ import annotations

from coordinator.streaming.pchannel import PChannelMeta, PChannelState
from coordinator.streaming.policy import place


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
    # A third node joining does not steal channels.
    assert place(placed, {1, 2, 3}) == {}


def test_place_moves_channels_of_a_lost_node() -> None:
    chans = [PChannelMeta(name=f"p{i}").assign_to(1 + i % 2).assign_done() for i in range(4)]
    moves = place(chans, {2})
    assert moves == {"p0": 2, "p2": 2}
    assert place(chans, set()) == {}


def test_place_redoes_interrupted_assignment_on_same_live_node() -> None:
    c = PChannelMeta(name="p0").assign_to(5)  # ASSIGNING: the coordinator died mid-step
    assert place([c], {5, 6}) == {"p0": 5}
