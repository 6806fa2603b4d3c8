"""Query placement decisions: replicas, delegators, sealed segments. Pure logic, no I/O.

* **Replicas** (``assign_replicas``): a loaded collection has ``replica_number``
  replicas, each a disjoint set of query nodes. Live members stay; a replica
  without members takes a free node first (the least busy); then every other
  free node joins the replica with the fewest members, so all nodes work.
  Dead nodes leave. A replica left empty takes a member from the replica with
  the most (at least two): one serving replica per node set beats a spare node
  in another. A replica stays empty only while there are fewer nodes than replicas.
* **Delegators** (``place_channels``): one per vchannel per replica, on one of
  the replica's nodes; live placements stay, new ones go to the node serving the
  fewest vchannels.
* **Sealed segments** (``place_segments``): on one node of the replica each;
  live placements stay, new ones go to the node with the lowest score, the rows
  it already holds (Milvus' row-count score).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping


def assign_replicas(
    replica_number: int,
    current: Mapping[int, frozenset[int]],
    live_nodes: set[int],
    busy: Mapping[int, int] | None = None,
) -> dict[int, frozenset[int]]:
    """Replica id (1..replica_number) -> member nodes. ``busy``: other replicas a node serves (tiebreak)."""
    busy = busy or {}
    members = {r: set(current.get(r, frozenset())) & live_nodes for r in range(1, replica_number + 1)}
    taken = set().union(*members.values()) if members else set()
    free = sorted(live_nodes - taken, key=lambda n: (busy.get(n, 0), n))
    for r in sorted(members):
        if not members[r] and free:
            members[r].add(free.pop(0))
    for node in free:
        r = min(members, key=lambda r: (len(members[r]), r))
        members[r].add(node)
    for r in sorted(members):
        if members[r]:
            continue
        donor = max(members, key=lambda d: (len(members[d]), -d))
        if len(members[donor]) < 2:
            break
        node = max(members[donor])  # the most recent member moves
        members[donor].discard(node)
        members[r].add(node)
    return {r: frozenset(ns) for r, ns in members.items()}


def place_channels(wanted: list[str], current: Mapping[str, int], live_nodes: set[int]) -> dict[str, int]:
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


def place_segments(
    rows: Mapping[int, int], current: Mapping[int, int], nodes: set[int], node_rows: Mapping[int, int] | None = None
) -> dict[int, int]:
    """``{segment: node}`` for every segment of ``rows`` (segment -> row count) on ``nodes``.

    ``node_rows`` is what each node holds besides (other collections); largest segments are placed first.
    """
    if not nodes:
        return {}
    result = {s: n for s, n in current.items() if s in rows and n in nodes}
    score: Counter[int] = Counter({n: (node_rows or {}).get(n, 0) for n in nodes})
    for s, n in result.items():
        score[n] += rows[s]
    for s in sorted((s for s in rows if s not in result), key=lambda s: (-rows[s], s)):
        target = min(nodes, key=lambda n: (score[n], n))
        result[s] = target
        score[target] += rows[s]
    return result
