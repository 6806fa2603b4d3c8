"""The comparison's outputs: the markdown report, issue #8's ratios, and the two PNG plots.

The ratios to real Milvus 2.3.5 (issue #33) are ``compare_vs_milvus``'s; the
report puts them under each set's table and in a goals table of their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import compare_vs_milvus
from compare_measure import ef_for_recall, qps_at_recall

SYSTEMS = ("Strata", compare_vs_milvus.MILVUS, "milvus-lite", "hnswlib", "numpy")
COLORS = {
    "Strata": "tab:blue",
    compare_vs_milvus.MILVUS: "tab:red",
    "milvus-lite": "tab:orange",
    "hnswlib": "tab:green",
    "numpy": "tab:gray",
}
#: Colours of the further Strata runs (other shard counts), in order.
MORE_STRATA_COLORS = ("tab:purple", "tab:brown", "tab:pink", "tab:olive")
#: (label, key in a system's figures, sub-key) of the latency plot's groups.
LATENCY_GROUPS = (
    ("nq=1", "nq1", None),
    ("nq=1 x16", "nq1_concurrent", None),
    ("nq=100", "nq100", None),
    ("filter 10%\n(nq=100)", "filtered", "10%"),
    ("filter 1%\n(nq=100)", "filtered", "1%"),
    ("scalar query\n(limit 10)", "scalar_query", None),
)


#: Recalls at which the two ef sweeps' QPS are compared (each system at its own ef).
CURVE_RECALLS = (0.95, 0.99)


def _ratio(a: Any, b: Any) -> float | None:
    return round(a / b, 3) if isinstance(a, int | float) and isinstance(b, int | float) and b else None


def _get(figures: dict[str, Any], key: str, sub: str | None = None) -> dict[str, Any] | None:
    value = figures.get(key)
    if isinstance(value, dict) and sub is not None:
        value = value.get(sub)
    return value if isinstance(value, dict) else None


def strata_name(shards: int, runs: tuple[int, ...]) -> str:
    """"Strata" for the first shard count run (the default), "Strata, N shards" for the others."""
    return "Strata" if shards == runs[0] else f"Strata, {shards} shards"


def _order(systems: dict[str, Any]) -> list[str]:
    """The systems present, Strata's runs first (the default one leading), then the others as in ``SYSTEMS``."""
    more = [n for n in systems if n.startswith("Strata, ")]
    return [n for n in (SYSTEMS[0], *more, *SYSTEMS[1:]) if n in systems]


def _color(name: str, order: list[str]) -> str:
    if name in COLORS:
        return COLORS[name]
    more = [n for n in order if n.startswith("Strata, ")]
    return MORE_STRATA_COLORS[more.index(name) % len(MORE_STRATA_COLORS)]


def all_goals(systems: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``goals`` of the default Strata run, with each further run's under ``"other_strata"``."""
    out = goals(systems)
    out["other_strata"] = {n: goals(systems, n) for n in _order(systems) if n.startswith("Strata, ")}
    return out


def goals(systems: dict[str, dict[str, Any]], strata: str = "Strata") -> dict[str, Any]:
    """Issue #8's ratios for one data set, from the figures of each system (missing ones are ``None``)."""
    s, lite, hn = (systems.get(n, {}) for n in (strata, "milvus-lite", "hnswlib"))
    out: dict[str, Any] = {}
    out["insert_rows_per_s_vs_milvus_lite"] = _ratio(s.get("insert_rows_per_s"), lite.get("insert_rows_per_s"))
    nq1, lite_nq1 = _get(s, "nq1"), _get(lite, "nq1")
    out["nq1_p50_ms"] = nq1 and nq1["p50_ms"]
    out["nq1_p50_vs_milvus_lite"] = _ratio(nq1 and nq1["p50_ms"], lite_nq1 and lite_nq1["p50_ms"])
    nq100, hn100 = _get(s, "nq100"), _get(hn, "nq100")
    out["nq100_qps_vs_hnswlib_same_ef"] = _ratio(nq100 and nq100["qps"], hn100 and hn100["qps"])
    if nq100 and "sweep" in hn:
        at = qps_at_recall(hn["sweep"], s["recall"])
        out["hnswlib_nq100_qps_at_strata_recall"] = None if at is None else round(at, 1)
        out["nq100_qps_vs_hnswlib_equal_recall"] = _ratio(nq100["qps"], at)
    if "sweep" in s and "sweep" in hn:
        # Curve against curve (ann-benchmarks style): each system at the ef that gives it this recall.
        for r in CURVE_RECALLS:
            mine, theirs = qps_at_recall(s["sweep"], r), qps_at_recall(hn["sweep"], r)
            out[f"nq100_qps_vs_hnswlib_curve_{r}"] = _ratio(mine, theirs)
    sq, lite_sq = _get(s, "scalar_query"), _get(lite, "scalar_query")
    out["scalar_query_p50_ms"] = sq and sq["p50_ms"]
    out["scalar_query_p50_vs_milvus_lite"] = _ratio(sq and sq["p50_ms"], lite_sq and lite_sq["p50_ms"])
    f1 = _get(s, "filtered", "1%")
    out["filtered_1pct_recall"] = f1 and f1["recall"]
    out["ef_for_recall_095"] = {n: ef_for_recall(f["sweep"]) for n, f in systems.items() if "sweep" in f}
    return out


def _goal_cell(info: dict[str, Any], key: str) -> str:
    """The default run's figure, the other shard counts' in brackets."""
    main = info["goals"].get(key)
    cell = "-" if main is None else f"{main:g}"
    others = [
        f"{name.removeprefix('Strata, ')}: {'-' if g.get(key) is None else format(g[key], 'g')}"
        for name, g in info["goals"].get("other_strata", {}).items()
    ]
    return f"{cell} ({'; '.join(others)})" if others else cell


def _fmt(v: float | None, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def _lat(r: dict[str, Any] | None) -> str:
    return "-" if r is None else f"{r['p50_ms']:.2f} / {r['p99_ms']:.2f}"


def _rss(name: str, f: dict[str, Any]) -> str:
    rss = f.get("peak_rss_mib") or {}
    if not rss:
        return "-"
    if name == "hnswlib":
        return f"+{sum(rss.values()):,.0f} (index)"
    top = max(rss, key=lambda r: rss[r])
    return f"{sum(rss.values()):,.0f} ({top} {rss[top]:,.0f})" if len(rss) > 1 else f"{sum(rss.values()):,.0f}"


def _set_table(name: str, info: dict[str, Any]) -> list[str]:
    shares = ", ".join(f"{f['label']} = {f['share']:.2%}" for f in info["filters"])
    lines = [
        f"### {name}: {info['rows']:,} rows x {info['dim']}, {info['queries']:,} queries (filters: {shares})",
        "",
        "| system | insert rows/s | searchable s | nq=1 QPS | nq=1 p50 / p99 ms | nq=1 x16 QPS | "
        "nq=1 x16 p50 / p99 ms | nq=100 QPS | nq=100 p50 / p99 ms | recall@10 | filter 10% QPS / recall | "
        "filter 1% QPS / recall | scalar query p50 / p99 ms | ef for recall >= 0.95 | peak RSS MiB |",
        "|---|" + "---|" * 14,
    ]
    for system in _order(info["systems"]):
        f = info["systems"][system]
        if "error" in f:
            lines.append(f"| {system} | failed: {f['error'][:100]} |" + " |" * 13)
            continue
        filt = [_get(f, "filtered", label) for label in ("10%", "1%")]
        ef95 = ef_for_recall(f["sweep"]) if "sweep" in f else None
        lines.append(
            f"| {system} | {_fmt(f.get('insert_rows_per_s'))} | {_fmt(f.get('searchable_s'), '.1f')} | "
            f"{_fmt(f['nq1']['qps'])} | {_lat(f['nq1'])} | {_fmt((_get(f, 'nq1_concurrent') or {}).get('qps'))} | "
            f"{_lat(_get(f, 'nq1_concurrent'))} | {_fmt(f['nq100']['qps'])} | {_lat(f['nq100'])} | {f['recall']:.4f} | "
            + " | ".join("-" if r is None else f"{r['qps']:,.0f} / {r['recall']:.4f}" for r in filt)
            + f" | {_lat(_get(f, 'scalar_query'))} | "
            f"{'-' if 'sweep' not in f else (ef95 or '> ' + str(max(p['ef'] for p in f['sweep'])))} | "
            f"{_rss(system, f)} |"
        )
    return lines


GOAL_ROWS = (
    ("insert rows/s, Strata / milvus-lite", "insert_rows_per_s_vs_milvus_lite", ">= 2"),
    ("nq=1 p50 ms, Strata", "nq1_p50_ms", "<= 2"),
    ("nq=1 p50, Strata / milvus-lite", "nq1_p50_vs_milvus_lite", "far below 1"),
    ("nq=100 QPS, Strata / hnswlib (same ef)", "nq100_qps_vs_hnswlib_same_ef", ""),
    ("nq=100 QPS, Strata / hnswlib (equal recall)", "nq100_qps_vs_hnswlib_equal_recall", ">= 0.5"),
    *(
        (f"nq=100 QPS, Strata / hnswlib, sweep curves at recall {r}", f"nq100_qps_vs_hnswlib_curve_{r}", "report")
        for r in CURVE_RECALLS
    ),
    ("filtered scalar query p50 ms, Strata", "scalar_query_p50_ms", "<= 10"),
    ("filtered scalar query p50, Strata / milvus-lite", "scalar_query_p50_vs_milvus_lite", "far below 1"),
    ("recall@10 at 1% selectivity, Strata", "filtered_1pct_recall", ">= 0.95"),
)


def _shards_note(shards: list[int]) -> str:
    first = shards[0]
    default = " (create_collection's default, in Milvus as in Strata)" if first == 1 else ""
    more = "".join(f"; 'Strata, {n} shards' is the same run with {n}" for n in shards[1:])
    return (
        f"Strata's collection has {first} shard{'s' if first > 1 else ''}{default}{more}. "
        "The goals are computed on 'Strata'; the other runs' figures follow in brackets."
    )


def markdown(result: dict[str, Any]) -> str:
    """The whole report: conditions, one table per data set, the goals across sets."""
    a = result["args"]
    lines = [
        "# Strata vs Milvus 2.3.5, milvus-lite and the bounds (issues #8 and #33)",
        "",
        f"{result['date']}, {result['cpus']} CPUs shared by the client and every server process "
        f"(1-min load average {result['loadavg_1m']['start']} at start, {result['loadavg_1m']['end']} at end), "
        f"{result['wall_s']:.0f} s in all. HNSW M={a['m']}, efConstruction={a['ef_construction']}, ef={a['ef']} "
        f"(sweep {', '.join(map(str, a['ef_sweep']))} at nq=100, up to the first ef >= {a['ef']} with recall "
        f">= {result['sweep_stop_recall']}), L2, k=10, inserts of {a['batch']:,} rows. {_shards_note(a['shards'])} "
        f"nq=1: {a['nq1_requests']} requests one after another; x16: {a['concurrent_requests']} requests from "
        f"{a['clients']} client threads, each with its own connection; nq=100: every query, "
        f"{a.get('batch_passes', 1)} times over (the sweep's point at ef={a['ef']} is that loop); filters and "
        "the rest of the sweep: every query once; "
        f"scalar query: `tag == v`, limit 10, {a['scalar_requests']} requests. Searches are `Eventually` consistent. "
        f"Searchable: flush{' + compact() until completed' if a.get('compact', False) else ''} + create_index + "
        "load_collection until loaded. "
        "Peak RSS: Strata and Milvus 2.3.5 are the sum of their processes (largest in brackets), hnswlib the growth of this "
        "process while the graph was built; this process (client, data, bounds) peaked at "
        f"{result['benchmark_process_peak_rss_mib']:,.0f} MiB.",
        "",
    ]
    for name, info in result["sets"].items():
        lines += _set_table(name, info)
        lines.append("")
        lines += compare_vs_milvus.set_table(name, info, _order(info["systems"]))
    names = list(result["sets"])
    lines += compare_vs_milvus.goals_table(result["sets"])
    lines += [
        "### Issue #8's goals",
        "",
        "| figure | goal | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for label, key, goal in GOAL_ROWS:
        cells = [_goal_cell(result["sets"][n], key) for n in names]
        lines.append(f"| {label} | {goal} | " + " | ".join(cells) + " |")
    lines.append(
        "| ef for recall@10 >= 0.95 (Strata / Milvus 2.3.5 / milvus-lite / hnswlib) | report | "
        + " | ".join(
            " / ".join(str(result["sets"][n]["goals"]["ef_for_recall_095"].get(s) or "-") for s in SYSTEMS[:4])
            for n in names
        )
        + " |"
    )
    return "\n".join(lines) + "\n"


def plots(result: dict[str, Any], out_dir: Path) -> list[Path]:
    """``compare-recall-qps.png`` (the ef sweep) and ``compare-latency.png`` (p50 bars, p99 whiskers); none
    without matplotlib (the bench extra)."""
    try:
        import matplotlib
    except ImportError:
        return []

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = result["sets"]
    paths = []
    fig, axes = plt.subplots(1, len(sets), figsize=(5.5 * len(sets), 4.5), squeeze=False)
    for ax, (name, info) in zip(axes[0], sets.items(), strict=True):
        order = _order(info["systems"])
        for system in order:
            f = info["systems"][system]
            if "sweep" in f:
                pts = f["sweep"]
                color = _color(system, order)
                ax.plot([p["recall"] for p in pts], [p["qps"] for p in pts], "o-", color=color, label=system)
                for p in pts:
                    ax.annotate(
                        str(p["ef"]), (p["recall"], p["qps"]), fontsize=7, xytext=(3, 3), textcoords="offset points"
                    )
            elif "nq100" in f:
                ax.plot([f["recall"]], [f["nq100"]["qps"]], "s", color=_color(system, order), label=f"{system} (exact)")
        ax.axvline(0.95, color="black", linestyle=":", linewidth=1)
        ax.set_yscale("log")
        ax.set_xlabel("recall@10")
        ax.set_ylabel("QPS at nq=100 (labels: ef)")
        ax.set_title(f"{name}: {info['rows']:,} x {info['dim']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(out_dir / "compare-recall-qps.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, len(sets), figsize=(6.5 * len(sets), 4.5), squeeze=False)
    for ax, (name, info) in zip(axes[0], sets.items(), strict=True):
        order = _order(info["systems"])
        present = [s for s in order if "nq1" in info["systems"][s]]
        width = 0.8 / max(1, len(present))
        for n, system in enumerate(present):
            f = info["systems"][system]
            xs, p50, p99 = [], [], []
            for g, (_, key, sub) in enumerate(LATENCY_GROUPS):
                r = _get(f, key, sub)
                if r is not None:
                    xs.append(g + (n - (len(present) - 1) / 2) * width)
                    p50.append(r["p50_ms"])
                    p99.append(r["p99_ms"])
            errs = [[0] * len(p50), [hi - lo for lo, hi in zip(p50, p99, strict=True)]]
            ax.bar(xs, p50, width, yerr=errs, capsize=2, color=_color(system, order), label=system)
        ax.set_xticks(range(len(LATENCY_GROUPS)), [g[0] for g in LATENCY_GROUPS], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("request latency ms (bar p50, whisker p99)")
        ax.set_title(f"{name}: {info['rows']:,} x {info['dim']}")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    paths.append(out_dir / "compare-latency.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths
