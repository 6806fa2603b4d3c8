"""Filtered query and filtered search at 1M rows, with and without each scalar index, Strata beside Milvus 2.3.5.

    PYTHONPATH=. nice -n -15 .venv/bin/python benchmarks/scalar_filters.py [--rows 1000000] [--requests 40] [--passes 3]
        [--servers strata,milvus] [--milvus-venv /tmp/milvus235] [--dir PARENT] [--json FILE]
        [--indexes "STL_SORT on k,Trie on s"] [--baseline CHECKOUT]

One collection per server: int64 ``id``, int64 ``k`` uniform in [0, 1000),
VARCHAR ``s`` = ``w<k as 3 digits>-<n>``, an 8-d float vector ``v`` (FLAT
index). Filters of three selectivities: on ``k`` ``k == 7`` (0.1%),
``k < 10`` (1%), ``k < 100`` (10%); on ``s`` the prefixes ``w007%``,
``w00%``, ``w0%``. For each scalar index (none, then each type the server has:
Strata INVERTED, STL_SORT, BITMAP, AUTOINDEX on ``k``, INVERTED, Trie, NGRAM
on ``s``; Milvus 2.3.5 STL_SORT on ``k`` and Trie on ``s``, the scalar
indexes it has) the collection is released, the index swapped, loaded again,
and each filter on the indexed field is timed as

* ``query``: ``query(filter, output_fields=["id"], limit=100)``,
* ``count``: ``query(filter, output_fields=["count(*)"])``,
* ``search``: top 10 of one query vector under the filter,

``--requests`` times after two warm-ups, one request at a time,
``consistency_level="Eventually"`` (the data is flushed and loaded: both
servers answer from sealed segments). Both servers are up for the whole run;
each index is timed ``--passes`` times on each server in alternation (who goes
first alternates), and each cell keeps its fastest p50, so a pass that met a
burst of the machine's other work does not count. Prints a markdown table of
p50 in ms and one JSON line. ``--indexes`` keeps only the named index rows
(labels as in the table, ``none`` for no index); ``--baseline`` adds a second
Strata running the code of another checkout (``Strata (baseline)``), timed in
the same alternation, to compare a change before and after in one run. Both servers run on loopback and are stopped
(their whole process groups) however the run ends.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from compare_servers import strata
from milvus_server import DEFAULT_VENV, milvus_235
from pymilvus import DataType, MilvusClient

#: Filters per field, by selectivity: an equality and ranges on ``k``, prefixes of ``s``.
FILTERS = {
    "k": {"0.1%": "k == 7", "1%": "k < 10", "10%": "k < 100"},
    "s": {"0.1%": 's like "w007%"', "1%": 's like "w00%"', "10%": 's like "w0%"'},
}
#: (field, index type, params); "none" measures every field's filters by scanning.
Config = tuple[str, str, dict[str, Any]]
STRATA_INDEXES: tuple[Config, ...] = (
    ("", "none", {}), ("k", "INVERTED", {}), ("k", "STL_SORT", {}), ("k", "BITMAP", {}), ("k", "AUTOINDEX", {}),
    ("s", "INVERTED", {}), ("s", "Trie", {}), ("s", "NGRAM", {"min_gram": 2, "max_gram": 3}),
)
MILVUS_INDEXES: tuple[Config, ...] = (("", "none", {}), ("k", "STL_SORT", {}), ("s", "Trie", {}))
CONFIGS = {"Strata": STRATA_INDEXES, "Milvus 2.3.5": MILVUS_INDEXES}
COLLECTION = "scalar_filters"
BATCH = 50_000


def _log(msg: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def _load(client: MilvusClient, rows: int) -> None:
    schema = MilvusClient.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("k", DataType.INT64)
    schema.add_field("s", DataType.VARCHAR, max_length=16)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=8)
    client.create_collection(COLLECTION, schema=schema, num_shards=1)
    rng = np.random.default_rng(7)
    for start in range(0, rows, BATCH):
        n = min(BATCH, rows - start)
        keys = rng.integers(0, 1000, n)
        vecs = rng.random((n, 8), dtype=np.float32)
        client.insert(COLLECTION, [{"id": start + i, "k": int(keys[i]), "s": f"w{int(keys[i]):03d}-{(start + i) % 97}",
                                    "v": vecs[i]} for i in range(n)])
    client.flush(COLLECTION)
    index = client.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    client.create_index(COLLECTION, index)


def _swap_index(client: MilvusClient, config: Config) -> None:
    field, index_type, params = config
    client.release_collection(COLLECTION)
    if "scalar" in client.list_indexes(COLLECTION):
        client.drop_index(COLLECTION, "scalar")
    if index_type != "none":
        index = client.prepare_index_params()
        index.add_index(field, index_name="scalar", index_type="" if index_type == "AUTOINDEX" else index_type,
                        params=params)
        client.create_index(COLLECTION, index, timeout=600)
    client.load_collection(COLLECTION, timeout=600)


def _p50(call: Callable[[], Any], requests: int) -> float:
    call()
    call()
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _measure(client: MilvusClient, requests: int, fields: list[str]) -> dict[str, dict[str, float]]:
    query_vector = [[0.5] * 8]
    out: dict[str, dict[str, float]] = {}
    for field, filters in FILTERS.items():
        if field not in fields:
            continue
        for selectivity, expr in filters.items():
            out[f"{field} {selectivity}"] = {
                "query": _p50(lambda e=expr: client.query(COLLECTION, filter=e, output_fields=["id"], limit=100,
                                                          consistency_level="Eventually"), requests),
                "count": _p50(lambda e=expr: client.query(COLLECTION, filter=e, output_fields=["count(*)"],
                                                          consistency_level="Eventually"), requests),
                "search": _p50(lambda e=expr: client.search(COLLECTION, data=query_vector, limit=10, filter=e,
                                                            consistency_level="Eventually"), requests),
            }
    return out


def _configs(server: str) -> tuple[Config, ...]:
    """The indexes a server has (every Strata, the baseline too, has Strata's)."""
    return STRATA_INDEXES if server.startswith("Strata") else MILVUS_INDEXES


def _label(config: Config) -> str:
    field, index_type, _ = config
    return "none" if index_type == "none" else f"{index_type} on {field}"


def _fastest(passes: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Per filter and call, the fastest p50 of the passes (a pass that met a burst of other work is dropped)."""
    return {f: {call: min(p[f][call] for p in passes) for call in passes[0][f]} for f in passes[0]}


def _run_all(servers: dict[str, Any], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Load every server, then per index: swap it in on each server that has it, and time ``--passes`` passes,
    the servers in alternation (who goes first alternates), keeping each cell's fastest p50."""
    clients = {name: MilvusClient(server.uri) for name, server in servers.items()}
    try:
        for name, client in clients.items():
            start = time.perf_counter()
            _log(f"{name}: loading {args.rows} rows")
            _load(client, args.rows)
            _log(f"{name}: loaded in {time.perf_counter() - start:.0f} s")
        figures: dict[str, dict[str, Any]] = {name: {} for name in clients}
        labels = [label for label in dict.fromkeys(_label(c) for configs in CONFIGS.values() for c in configs)
                  if not args.indexes or label in args.indexes]
        for label in labels:
            having = {name: next(c for c in _configs(name) if _label(c) == label) for name in clients
                      if any(_label(c) == label for c in _configs(name))}
            for name, config in having.items():
                start = time.perf_counter()
                _swap_index(clients[name], config)
                _log(f"{name}: index {label} in place and loaded in {time.perf_counter() - start:.1f} s")
            passes: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in having}
            order = list(having)
            for i in range(args.passes):
                for name in order if i % 2 == 0 else reversed(order):
                    field, index_type, _ = having[name]
                    passes[name].append(_measure(clients[name], args.requests,
                                                 list(FILTERS) if index_type == "none" else [field]))
            for name in having:
                figures[name][label] = _fastest(passes[name])
                _log(f"{name}: {label} {json.dumps(figures[name][label])}")
        return figures
    finally:
        for client in clients.values():
            client.close()


def _table(figures: dict[str, dict[str, Any]]) -> str:
    lines = ["| server | index | filter, selectivity | query (limit 100) | count(*) | search top 10 |",
             "|---|---|---|---:|---:|---:|"]
    for server, by_index in figures.items():
        for index_type, by_filter in by_index.items():
            for selectivity, t in by_filter.items():
                lines.append(f"| {server} | {index_type} | {selectivity} | {t['query']:.2f} | {t['count']:.2f} | "
                             f"{t['search']:.2f} |")
    return "\n".join(lines)


@contextlib.contextmanager
def _server(name: str, workdir: Path, venv: Path, baseline: Path | None) -> Iterator[Any]:
    if name == "strata":
        with strata(workdir / "strata") as server:
            yield server
    elif name == "baseline":
        with strata(workdir / "strata", repo=baseline, name="Strata (baseline)") as server:
            yield server
    else:
        with milvus_235(workdir / "milvus", venv) as server:
            yield server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--requests", type=int, default=40)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--servers", default="strata,milvus")
    ap.add_argument("--milvus-venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--indexes", type=lambda v: [s.strip() for s in v.split(",") if s.strip()], default=[],
                    help='index rows to time, labels as in the table ("none", "STL_SORT on k", ...); default all')
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout run as a second Strata beside this one (before/after in one run)")
    args = ap.parse_args()
    names = [s.strip() for s in args.servers.split(",") if s.strip()]
    if args.baseline is not None:
        names.insert(1, "baseline")
    with tempfile.TemporaryDirectory(prefix="scalar-filters-", dir=args.dir) as tmp, contextlib.ExitStack() as stack:
        servers = {}
        for name in names:
            server = stack.enter_context(_server(name, Path(tmp) / name, args.milvus_venv, args.baseline))
            servers[server.name] = server
        figures = _run_all(servers, args)
    print(_table(figures))
    record = {"scalar_filters": figures, "rows": args.rows, "requests": args.requests, "passes": args.passes,
              "date": datetime.date.today().isoformat(), "load": os.getloadavg()}
    print(json.dumps(record))
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
