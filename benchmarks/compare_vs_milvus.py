"""Every figure of the comparison divided by real Milvus 2.3.5's, and issue #33's goals on those ratios.

A ratio is always *system / Milvus 2.3.5* of the raw figure: above 1 is
better for rates (rows/s, QPS), below 1 is better for times (seconds, ms,
MiB). "Equal recall" divides a system's nq=100 QPS at the default ``ef`` by
Milvus's QPS at that same recall, interpolated on Milvus's ``ef`` sweep; the
curve ratios compare the two sweeps at recall 0.95 and 0.99, each system at
the ``ef`` that gives it that recall.
"""

from __future__ import annotations

from typing import Any

from compare_measure import qps_at_recall

MILVUS = "Milvus 2.3.5"
CURVE_RECALLS = (0.95, 0.99)

#: (column label, key in the ratios) of the per-set table, in order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("insert rows/s", "insert_rows_per_s"),
    ("searchable s", "searchable_s"),
    ("nq=1 QPS", "nq1_qps"),
    ("nq=1 p50", "nq1_p50"),
    ("nq=1 p99", "nq1_p99"),
    ("nq=1 x16 QPS", "nq1_concurrent_qps"),
    ("nq=1 x16 p50", "nq1_concurrent_p50"),
    ("nq=100 QPS (same ef)", "nq100_qps"),
    ("nq=100 p50", "nq100_p50"),
    ("nq=100 QPS (equal recall)", "nq100_qps_equal_recall"),
    *((f"sweep QPS at recall {r}", f"nq100_qps_curve_{r}") for r in CURVE_RECALLS),
    ("filter 10% QPS", "filtered_10%_qps"),
    ("filter 1% QPS", "filtered_1%_qps"),
    ("scalar query p50", "scalar_query_p50"),
    ("peak RSS", "peak_rss"),
)

#: Issue #33's goals: (label, key in the ratios, goal) for the default Strata run.
GOALS: tuple[tuple[str, str, str], ...] = (
    ("insert rows/s", "insert_rows_per_s", ">= 1.5"),
    ("nq=1 p50", "nq1_p50", "<= 0.5"),
    ("nq=100 QPS at equal recall", "nq100_qps_equal_recall", ">= 1.5"),
    ("16 concurrent clients (nq=1) QPS", "nq1_concurrent_qps", ">= 1.5"),
    ("time to searchable", "searchable_s", "<= 0.7"),
    ("scalar query p50", "scalar_query_p50", "report"),
)


def _ratio(a: Any, b: Any) -> float | None:
    ok = isinstance(a, int | float) and isinstance(b, int | float) and b
    return round(a / b, 3) if ok else None


def _at(figures: dict[str, Any], *path: str) -> Any:
    value: Any = figures
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _rss_total(figures: dict[str, Any]) -> float | None:
    rss = figures.get("peak_rss_mib")
    return sum(rss.values()) if isinstance(rss, dict) and rss else None


def ratios(mine: dict[str, Any], milvus: dict[str, Any]) -> dict[str, float | None]:
    """One system's figures over Milvus 2.3.5's (``None`` where either side lacks the figure)."""
    out: dict[str, float | None] = {}
    for key in ("insert_rows_per_s", "searchable_s"):
        out[key] = _ratio(mine.get(key), milvus.get(key))
    for name in ("nq1", "nq1_concurrent", "nq100"):
        out[f"{name}_qps"] = _ratio(_at(mine, name, "qps"), _at(milvus, name, "qps"))
        for p in ("p50", "p99"):
            out[f"{name}_{p}"] = _ratio(_at(mine, name, f"{p}_ms"), _at(milvus, name, f"{p}_ms"))
    sweep = milvus.get("sweep")
    recall, qps = mine.get("recall"), _at(mine, "nq100", "qps")
    at = qps_at_recall(sweep, recall) if sweep and isinstance(recall, float) else None
    out["nq100_qps_equal_recall"] = _ratio(qps, at)
    for r in CURVE_RECALLS:
        theirs = qps_at_recall(sweep, r) if sweep else None
        ours = qps_at_recall(mine["sweep"], r) if "sweep" in mine else None
        out[f"nq100_qps_curve_{r}"] = _ratio(ours, theirs)
    for label in ("10%", "1%"):
        out[f"filtered_{label}_qps"] = _ratio(
            _at(mine, "filtered", label, "qps"), _at(milvus, "filtered", label, "qps")
        )
    for p in ("p50", "p99"):
        out[f"scalar_query_{p}"] = _ratio(_at(mine, "scalar_query", f"{p}_ms"), _at(milvus, "scalar_query", f"{p}_ms"))
    out["peak_rss"] = _ratio(_rss_total(mine), _rss_total(milvus))
    return out


def vs_milvus(systems: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Every other system's ratios to Milvus 2.3.5; empty when Milvus did not run or failed."""
    milvus = systems.get(MILVUS)
    if not milvus or "error" in milvus:
        return {}
    out = {name: ratios(f, milvus) for name, f in systems.items() if name != MILVUS and "error" not in f}
    if "hnswlib" in out:
        out["hnswlib"]["peak_rss"] = None  # its figure is this process's growth, not a server's resident set
    return out


def _cell(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}" if abs(v) >= 0.1 else f"{v:.2g}"


def set_table(name: str, info: dict[str, Any], order: list[str]) -> list[str]:
    """The set's figures over Milvus 2.3.5's, one row per system (nothing when Milvus has no figures)."""
    table = info.get("vs_milvus") or {}
    if not table:
        failed = _at(info, "systems", MILVUS, "error")
        return [f"{name}: no ratios to Milvus 2.3.5 ({'failed: ' + failed if failed else 'not run'}).", ""]
    lines = [
        f"{name}, vs Milvus 2.3.5 (system / Milvus; rates: above 1 is faster, times and memory: below 1 is better):",
        "",
        "| system | " + " | ".join(label for label, _ in COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    for system in (s for s in order if s in table):
        lines.append(f"| {system} | " + " | ".join(_cell(table[system].get(key)) for _, key in COLUMNS) + " |")
    return [*lines, ""]


def goals_table(sets: dict[str, Any]) -> list[str]:
    """Issue #33's goals: Strata / Milvus 2.3.5 per data set, the other shard counts in brackets."""
    names = list(sets)
    lines = [
        "### Issue #33's goals: Strata / Milvus 2.3.5",
        "",
        "| figure | goal | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for label, key, goal in GOALS:
        cells = []
        for n in names:
            table = sets[n].get("vs_milvus") or {}
            main = _cell(table.get("Strata", {}).get(key))
            more = [
                f"{s.removeprefix('Strata, ')}: {_cell(r.get(key))}"
                for s, r in table.items()
                if s.startswith("Strata, ")
            ]
            cells.append(f"{main} ({'; '.join(more)})" if more else main)
        lines.append(f"| {label} | {goal} | " + " | ".join(cells) + " |")
    return [*lines, ""]
