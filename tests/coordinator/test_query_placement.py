"""Replica membership, delegator and segment placement (pure)."""

from __future__ import annotations

from coordinator.query.placement import assign_replicas, place_channels, place_segments


def test_replicas_get_disjoint_nodes_and_every_node_works() -> None:
    r = assign_replicas(2, {}, {1, 2, 3})
    assert set(r) == {1, 2} and all(r.values())
    assert r[1] & r[2] == frozenset()
    assert r[1] | r[2] == {1, 2, 3}


def test_a_dead_member_leaves_and_a_new_node_fills_the_empty_replica() -> None:
    r = assign_replicas(2, {}, {1, 2})
    dead = next(iter(r[2]))
    after_loss = assign_replicas(2, r, {1, 2} - {dead})
    assert after_loss[2] == frozenset() and after_loss[1] == r[1]  # nothing moves from the live replica
    back = assign_replicas(2, after_loss, ({1, 2} - {dead}) | {9})
    assert back[2] == frozenset({9}) and back[1] == r[1]


def test_more_replicas_than_nodes_leaves_some_empty() -> None:
    r = assign_replicas(3, {}, {5})
    assert sorted(len(ns) for ns in r.values()) == [0, 0, 1]


def test_channels_stay_and_spread() -> None:
    assert place_channels(["a", "b", "c"], {"a": 2}, {1, 2}) == {"a": 2, "b": 1, "c": 1}
    assert place_channels(["a"], {"a": 3}, {1}) == {"a": 1}  # its node died


def test_segments_go_to_the_node_holding_the_fewest_rows_and_stay() -> None:
    placed = place_segments({10: 100, 11: 60, 12: 50}, {}, {1, 2})
    assert placed == {10: 1, 11: 2, 12: 2}
    # A node joins: nothing moves; a new segment goes to it.
    assert place_segments({10: 100, 11: 60, 12: 50, 13: 5}, placed, {1, 2, 3}) == {**placed, 13: 3}
    # A node dies: only its segments move.
    moved = place_segments({10: 100, 11: 60, 12: 50}, placed, {1})
    assert moved == {10: 1, 11: 1, 12: 1}


def test_an_emptied_replica_takes_a_node_from_a_replica_with_two() -> None:
    # The new node 9 joined replica 1 while 2's node was still alive; then 2's node died.
    r = assign_replicas(2, {1: frozenset({1, 9}), 2: frozenset({2})}, {1, 9})
    assert r == {1: frozenset({1}), 2: frozenset({9})}
