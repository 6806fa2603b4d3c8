"""Delegator placement decisions. Pure logic, no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping


def place_channels(
    wanted: list[str], current: Mapping[str, int], live_nodes: set[int]
) -> dict[str, int]:
    """Keep live placements; give every other wanted vchannel to the node serving the fewest.

    Returns the full wanted placement ``{vchannel: node_id}`` (empty if no node is alive).
    """
    if not live_nodes:
        return {}
    result = {v: n for v, n in current.items() if v in wanted and n in live_nodes}
    load: Counter[int] = Counter({n: 0 for n in live_nodes})
    load.update(result.values())
    for v in sorted(wanted):
        if v not in result:
            target = min(live_nodes, key=lambda n: (load[n], n))
            result[v] = target
            load[target] += 1
    return result
