"""Where unplaced pchannels go. Pure decision logic, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from coordinator.streaming.pchannel import PChannelMeta, PChannelState


def unplaced(channels: Sequence[PChannelMeta], live_nodes: set[int]) -> list[PChannelMeta]:
    """Channels that are not ASSIGNED to a live node (ASSIGNING counts as unplaced: it must be redone)."""
    return [c for c in channels if not (c.state == PChannelState.ASSIGNED and c.node_id in live_nodes)]


def place(
    channels: Sequence[PChannelMeta],
    live_nodes: set[int],
    vchannel_counts: Mapping[str, int] | None = None,
) -> dict[str, int]:
    """Choose a node for every unplaced channel: fewest pchannels, then fewest vchannels, then lowest id.

    Placed channels stay where they are (no flapping). Returns ``{pchannel: node_id}`` for the
    channels that must move; empty when there is no live node.
    """
    if not live_nodes:
        return {}
    vcounts = vchannel_counts or {}
    load: dict[int, tuple[int, int]] = {n: (0, 0) for n in live_nodes}
    todo = unplaced(channels, live_nodes)
    todo_names = {c.name for c in todo}
    for c in channels:
        if c.name not in todo_names:
            p, v = load[c.node_id]
            load[c.node_id] = (p + 1, v + vcounts.get(c.name, 0))
    moves: dict[str, int] = {}
    for c in sorted(todo, key=lambda c: (-vcounts.get(c.name, 0), c.name)):
        # Keep a channel on its previous node if that node is alive (recovering an ASSIGNING step).
        if c.node_id in live_nodes:
            target = c.node_id
        else:
            target = min(load, key=lambda n: (load[n][0], load[n][1], n))
        p, v = load[target]
        load[target] = (p + 1, v + vcounts.get(c.name, 0))
        moves[c.name] = target
    return moves
