"""Where pchannels go. Pure decision logic, no I/O.

Two kinds of move, never mixed in one round:

* **placement**: a pchannel that is not ASSIGNED to a live node (its node died,
  its assignment was interrupted, a client reported it broken) goes to the
  least-loaded live node (fewest pchannels, then fewest vchannels, then lowest
  id), or back to its own node if that node lives (an interrupted ASSIGNING);
* **rebalance**: when every pchannel is placed but one node has at least two
  pchannels more than another (a node joined, or one came back), *one*
  pchannel with the fewest vchannels moves from the most to the least loaded
  node, and no further rebalance move follows for a cooldown. Each move makes
  the spread strictly more even, so moves cannot oscillate; the cooldown keeps
  a node that joins and leaves again from making channels flap.

A move costs writers and readers of that pchannel a short pause (Remove on the
old owner, Assign on the new, clients follow the new term), so rebalancing is
deliberate and slow; placement is immediate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from coordinator.streaming.pchannel import PChannelMeta, PChannelState


def unplaced(channels: Sequence[PChannelMeta], live_nodes: set[int]) -> list[PChannelMeta]:
    """Channels that are not ASSIGNED to a live node (ASSIGNING counts as unplaced: it must be redone)."""
    return [c for c in channels if not (c.state == PChannelState.ASSIGNED and c.node_id in live_nodes)]


def _load(
    channels: Sequence[PChannelMeta], live_nodes: set[int], skip: set[str], vcounts: Mapping[str, int]
) -> dict[int, tuple[int, int]]:
    """``node -> (pchannels, vchannels)`` over the channels placed on live nodes, except ``skip``."""
    load: dict[int, tuple[int, int]] = {n: (0, 0) for n in live_nodes}
    for c in channels:
        if c.name not in skip and c.node_id in load:
            p, v = load[c.node_id]
            load[c.node_id] = (p + 1, v + vcounts.get(c.name, 0))
    return load


def place(
    channels: Sequence[PChannelMeta],
    live_nodes: set[int],
    vchannel_counts: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Choose a node for every unplaced channel; placed channels stay where they are.

    Returns ``{pchannel: node_id}`` for the channels that must move; empty when there is no live node.
    """
    if not live_nodes:
        return {}
    vcounts = vchannel_counts or {}
    todo = unplaced(channels, live_nodes)
    load = _load(channels, live_nodes, {c.name for c in todo}, vcounts)
    moves: dict[str, int] = {}
    for c in sorted(todo, key=lambda c: (-vcounts.get(c.name, 0), c.name)):
        # Keep a channel on its previous node if that node is alive (recovering an ASSIGNING step).
        target = c.node_id if c.node_id in live_nodes else min(load, key=lambda n: (*load[n], n))
        p, v = load[target]
        load[target] = (p + 1, v + vcounts.get(c.name, 0))
        moves[c.name] = target
    return moves


def rebalance_move(
    channels: Sequence[PChannelMeta],
    live_nodes: set[int],
    vchannel_counts: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """One move that evens the pchannel counts out, or nothing if they differ by at most one.

    Only for a fully placed assignment (every channel ASSIGNED to a live node).
    """
    if len(live_nodes) < 2 or unplaced(channels, live_nodes):
        return {}
    vcounts = vchannel_counts or {}
    load = _load(channels, live_nodes, set(), vcounts)
    heavy = max(load, key=lambda n: (load[n][0], load[n][1], -n))
    light = min(load, key=lambda n: (*load[n], n))
    if load[heavy][0] - load[light][0] < 2:
        return {}
    victim = min((c for c in channels if c.node_id == heavy), key=lambda c: (vcounts.get(c.name, 0), c.name))
    return {victim.name: light}


class BalancePolicy:
    """Plans each balancer round: placement first; otherwise at most one rebalance move per cooldown."""

    def __init__(self, *, rebalance_cooldown_seconds: float = 10.0) -> None:
        if rebalance_cooldown_seconds < 0:
            raise ValueError("rebalance cooldown must not be negative")
        self._cooldown = rebalance_cooldown_seconds
        self._last_rebalance = -math.inf

    def plan(
        self,
        channels: Sequence[PChannelMeta],
        live_nodes: set[int],
        vchannel_counts: Mapping[str, int] | None,
        now: float,
    ) -> dict[str, int]:
        """``{pchannel: node_id}`` to (re)assign now; ``now`` is a monotonic clock in seconds."""
        moves = place(channels, live_nodes, vchannel_counts)
        if moves:
            return moves
        if now - self._last_rebalance < self._cooldown:
            return {}
        moves = rebalance_move(channels, live_nodes, vchannel_counts)
        if moves:
            self._last_rebalance = now
        return moves
