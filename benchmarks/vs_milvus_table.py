"""The markdown table of ``vs_milvus.py``: one row per data set and index, Strata / Milvus and their ratio."""

from __future__ import annotations

from typing import Any


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a is not None and b else "-"


def _param(r: dict[str, Any], sweep: str | None) -> str:
    if sweep is None:
        return "-"
    mark = "" if r["reached"] else " (best)"
    return f"{r['param']}{mark}"


def markdown(results: list[dict[str, Any]], names: list[str]) -> str:
    """``names``: [Strata's, the other server's]; every figure reads "Strata / other (Strata ÷ other)"."""
    ours, theirs = names
    lines = [
        "| set | index | param (S / M) | recall@10 (S / M) | build s (S / M) | peak RSS MiB (S / M) | "
        "nq=1 QPS (S / M = ratio) | nq=100 QPS (S / M = ratio) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in results:
        a, b = row.get(ours, {}), row.get(theirs, {})
        cells = [f"| {row['set']} | {row['index']} |"]
        if "error" in a or not a:
            lines.append(f"{cells[0]} Strata failed: {a.get('error', 'not run')[:200]} | | | | | |")
            continue
        sweep = row["sweep"]
        name = f"{sweep}=" if sweep else ""
        if "error" in b or not b:
            note = f"Milvus: {b.get('error', 'not run')[:120]}"
            lines.append(
                f"{cells[0]} {name}{_param(a, sweep)} / - | {a['recall']:.3f} / - | {a['build_s']:.1f} / - | "
                f"{a['peak_rss_mib']:,.0f} / - | {a['nq1']['qps']:,.0f} / - | {a['nq100']['qps']:,.0f} / - ({note}) |"
            )
            continue
        lines.append(
            f"{cells[0]} {name}{_param(a, sweep)} / {_param(b, sweep)} | {a['recall']:.3f} / {b['recall']:.3f} | "
            f"{a['build_s']:.1f} / {b['build_s']:.1f} | {a['peak_rss_mib']:,.0f} / {b['peak_rss_mib']:,.0f} | "
            f"{a['nq1']['qps']:,.0f} / {b['nq1']['qps']:,.0f} = {_ratio(a['nq1']['qps'], b['nq1']['qps'])} | "
            f"{a['nq100']['qps']:,.0f} / {b['nq100']['qps']:,.0f} = {_ratio(a['nq100']['qps'], b['nq100']['qps'])} |"
        )
    return "\n".join(lines)
