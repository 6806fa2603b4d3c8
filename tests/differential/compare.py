"""Judging a step's answers: Strata's against milvus-lite's and both against the model. No I/O.

Where Milvus defines no order (query rows, delete keys) answers are compared
as sets; a query page is checked as a subset of the matching rows of the
right size; search hits are compared rank by rank on distance (within
float32 tolerance), and on keys only where the model shows no tie.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from tests.differential.steps import Expect, NamesExpectation, PageExpectation, SearchExpectation, Shape, Step

Hit = tuple[int, float, dict[str, Any]]
REL_TOL = 1e-4
ABS_TOL = 1e-4
_SERVER_ASSIGNED = ("collection_id", "created_timestamp", "update_timestamp")
# Keys milvus-lite leaves out: a describe_alias's db_name, a describe_collection's aliases (D22; list_aliases checks them).
_LITE_OMITS = ("db_name", "aliases")
# Milvus 2.6 gives a new collection the property timezone=UTC; milvus-lite does not (D27).
_DEFAULT_PROPERTIES = {"timezone": "UTC"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one server answered: a value, or the exception the client raised."""

    value: Any = None
    error: BaseException | None = None

    @property
    def raised(self) -> bool:
        return self.error is not None

    def render(self, step: Step) -> str:
        if self.error is not None:
            return f"raised {type(self.error).__name__}: {self.error}"
        try:
            text = repr(normalise(step, self.value))
        except (TypeError, KeyError, IndexError, ValueError):
            text = repr(self.value)
        return text if len(text) <= 1500 else text[:1500] + "..."


@dataclass(frozen=True, slots=True, kw_only=True)
class Mismatch:
    step: Step
    problems: Sequence[str]
    strata: Outcome
    lite: Outcome | None

    def render(self) -> str:
        lite = self.lite.render(self.step) if self.lite is not None else "not asked (model only)"
        return "\n".join([
            self.step.describe(),
            *(f"  - {p}" for p in self.problems),
            f"  Strata:      {self.strata.render(self.step)}",
            f"  milvus-lite: {lite}",
            f"  model:       {_render_expect(self.step)}",
        ])  # fmt: skip


def judge(step: Step, strata: Outcome, lite: Outcome | None) -> list[str]:
    """What is wrong with the answers (empty when all is well); ``lite`` is None for a model-only step."""
    problems: list[str] = []
    if step.expect is Expect.RAISES:
        if not strata.raised:
            problems.append("Strata answered; the call must fail")
        if lite is not None and not lite.raised:
            problems.append("milvus-lite answered; the call must fail (the test's expectation may be wrong)")
        return problems
    if lite is not None:
        if strata.raised != lite.raised:
            return [f"{'Strata' if strata.raised else 'milvus-lite'} raised, the other answered"]
        if strata.raised:
            return ["both raised; the model expects an answer (the test's expectation may be wrong)"]
        problems += _peer_problems(step, normalise(step, strata.value), normalise(step, lite.value))
    elif strata.raised:
        return ["Strata raised; the model expects an answer"]
    if step.expect is not Expect.ANSWERS:
        problems += [f"Strata: {p}" for p in _model_problems(step, normalise(step, strata.value))]
        if lite is not None:
            problems += [f"milvus-lite: {p}" for p in _model_problems(step, normalise(step, lite.value))]
    return problems


def normalise(step: Step, value: Any) -> Any:
    """The part of an answer that is compared, in a canonical form."""
    match step.shape:
        case Shape.ACK:
            return None
        case Shape.VALUE:
            return {k: v for k, v in value.items() if k not in _LITE_OMITS} if isinstance(value, Mapping) else value
        case Shape.PKS:
            # Milvus 2.6 (and Strata) answer a delete with its count, pymilvus gives {"delete_count": n};
            # milvus-lite answers the keys, pymilvus gives their list: both come down to how many.
            return int(value.get("delete_count", 0)) if isinstance(value, Mapping) else len(value)
        case Shape.ROWS:
            return sorted((dict(r) for r in value), key=lambda r: r["id"])
        case Shape.PAGE:
            return [dict(r) for r in value]
        case Shape.COUNT:
            return [dict(r) for r in value] if len(value) != 1 else value[0]["count(*)"]
        case Shape.SEARCH:
            return [[(hit["id"], hit["distance"], dict(hit["entity"])) for hit in hits] for hits in value]
        case Shape.DESCRIBE:
            described = {k: v for k, v in dict(value).items() if k not in _SERVER_ASSIGNED + _LITE_OMITS}
            described["properties"] = {
                k: v for k, v in described.get("properties", {}).items() if _DEFAULT_PROPERTIES.get(k) != v
            }
            described["fields"] = [{k: v for k, v in f.items() if k != "field_id"} for f in described["fields"]]
            return described
        case Shape.NAMES:
            assert isinstance(step.expect, NamesExpectation)
            names = value["aliases"] if isinstance(value, Mapping) else value  # list_aliases answers a dict
            return sorted(n for n in names if n.startswith(step.expect.prefix))
        case Shape.STATS:
            return int(value["row_count"])
        case _:
            assert_never(step.shape)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _peer_problems(step: Step, strata: Any, lite: Any) -> list[str]:
    match step.shape:
        case Shape.PAGE:
            return (
                []
                if len(strata) == len(lite)
                else [f"page sizes differ: Strata {len(strata)}, milvus-lite {len(lite)}"]
            )
        case Shape.SEARCH:
            assert isinstance(step.expect, SearchExpectation)
            return _search_peer_problems(strata, lite, step.expect)
        case Shape.ROWS:
            return [] if strata == lite else [f"rows differ: {_rows_diff(strata, lite, 'Strata', 'milvus-lite')}"]
        case _:
            if strata == lite:
                return []
            if isinstance(strata, dict) and isinstance(lite, dict):
                keys = sorted(k for k in strata.keys() | lite.keys() if strata.get(k, ...) != lite.get(k, ...))
                return [f"answers differ at {', '.join(f'{k}: {strata.get(k)!r} / {lite.get(k)!r}' for k in keys)}"]
            return ["answers differ"]


def _model_problems(step: Step, got: Any) -> list[str]:
    expect = step.expect
    match step.shape:
        case Shape.PAGE:
            assert isinstance(expect, PageExpectation)
            return _page_problems(got, expect)
        case Shape.SEARCH:
            assert isinstance(expect, SearchExpectation)
            return _search_problems(got, expect)
        case Shape.NAMES:
            assert isinstance(expect, NamesExpectation)
            return [] if got == list(expect.names) else [f"names {got}, model {list(expect.names)}"]
        case Shape.ROWS:
            assert isinstance(expect, list)
            return [] if got == expect else [_rows_diff(got, expect, "answer", "model")]
        case Shape.ACK | Shape.DESCRIBE:
            return []
        case Shape.VALUE | Shape.PKS | Shape.COUNT | Shape.STATS:
            return [] if got == expect else [f"{got!r} where the model has {expect!r}"]
        case _:
            assert_never(step.shape)


def _rows_diff(a: list[dict[str, Any]], b: list[dict[str, Any]], a_name: str, b_name: str) -> str:
    a_rows = {r["id"]: r for r in a}
    b_rows = {r["id"]: r for r in b}
    parts = []
    if only_a := sorted(a_rows.keys() - b_rows.keys()):
        parts.append(f"keys only in {a_name}: {only_a}")
    if only_b := sorted(b_rows.keys() - a_rows.keys()):
        parts.append(f"keys only in {b_name}: {only_b}")
    changed = [pk for pk in sorted(a_rows.keys() & b_rows.keys()) if a_rows[pk] != b_rows[pk]]
    for pk in changed[:3]:
        fields = sorted(set(a_rows[pk]) | set(b_rows[pk]))
        diff = {f: (a_rows[pk].get(f, "<absent>"), b_rows[pk].get(f, "<absent>")) for f in fields
                if a_rows[pk].get(f, "<absent>") != b_rows[pk].get(f, "<absent>")}  # fmt: skip
        parts.append(f"key {pk} differs ({a_name}, {b_name}): {diff}")
    if len(changed) > 3:
        parts.append(f"{len(changed) - 3} more keys differ")
    if len(a) != len(a_rows):
        parts.append(f"{a_name} repeats keys")
    return "; ".join(parts) or "same rows in another form"


def _page_problems(rows: list[dict[str, Any]], expect: PageExpectation) -> list[str]:
    matching = {r["id"]: r for r in expect.rows}
    size = max(0, min(expect.limit, len(matching) - expect.offset))
    problems = []
    if len(rows) != size:
        problems.append(f"{len(rows)} rows; {len(matching)} match, so limit {expect.limit} offset {expect.offset} "
                        f"gives {size}")  # fmt: skip
    pks = [r["id"] for r in rows]
    if len(set(pks)) != len(pks):
        problems.append(f"repeated keys {pks}")
    for r in rows:
        if r["id"] not in matching:
            problems.append(f"key {r['id']} does not match the filter")
        elif r != matching[r["id"]]:
            problems.append(f"row {r} where the model has {matching[r['id']]}")
    return problems


def _search_problems(got: list[list[Hit]], expect: SearchExpectation) -> list[str]:
    if len(got) != len(expect.ranked):
        return [f"{len(got)} result lists for {len(expect.ranked)} query vectors"]
    problems = []
    for q, (hits, ranked) in enumerate(zip(got, expect.ranked, strict=True)):
        distance = dict(ranked)
        window = ranked[expect.offset : expect.offset + expect.limit]
        if len(hits) != len(window):
            problems.append(f"query {q}: {len(hits)} hits; {len(ranked)} rows match, so limit {expect.limit} "
                            f"offset {expect.offset} gives {len(window)}")  # fmt: skip
        if len({h[0] for h in hits}) != len(hits):
            problems.append(f"query {q}: repeated keys {[h[0] for h in hits]}")
        for rank, (pk, dist, entity) in enumerate(hits):
            if pk not in distance:
                problems.append(f"query {q} rank {rank}: key {pk} does not match the filter (or is not live)")
                continue
            if not _close(dist, distance[pk]):
                problems.append(f"query {q} rank {rank}: key {pk} at distance {dist}, the model has {distance[pk]}")
            if rank < len(window) and not _close(dist, window[rank][1]):
                problems.append(f"query {q} rank {rank}: distance {dist}, the model's distance at this rank is "
                                f"{window[rank][1]} (key {window[rank][0]})")  # fmt: skip
            if entity != expect.entities[pk]:
                problems.append(f"query {q} rank {rank}: key {pk} entity {entity}, the model has {expect.entities[pk]}")
    return problems


def _search_peer_problems(strata: list[list[Hit]], lite: list[list[Hit]], expect: SearchExpectation) -> list[str]:
    if len(strata) != len(lite):
        return [f"{len(strata)} result lists from Strata, {len(lite)} from milvus-lite"]
    problems = []
    for q, (a, b) in enumerate(zip(strata, lite, strict=True)):
        if len(a) != len(b):
            problems.append(f"query {q}: {len(a)} hits from Strata, {len(b)} from milvus-lite")
            continue
        for rank, ((pk_a, d_a, _), (pk_b, d_b, _)) in enumerate(zip(a, b, strict=True)):
            if not _close(d_a, d_b):
                problems.append(f"query {q} rank {rank}: distance {d_a} (key {pk_a}) from Strata, {d_b} (key {pk_b}) "
                                "from milvus-lite")  # fmt: skip
            elif pk_a != pk_b and sum(_close(d_a, d) for _, d in expect.ranked[q]) < 2:
                problems.append(f"query {q} rank {rank}: key {pk_a} from Strata, {pk_b} from milvus-lite, no tie")
    return problems


def _render_expect(step: Step) -> str:
    expect = step.expect
    if isinstance(expect, Expect):
        return expect.value
    if isinstance(expect, SearchExpectation):
        windows = [list(r[expect.offset : expect.offset + expect.limit]) for r in expect.ranked]
        text = f"hits (key, distance) {windows}"
    elif isinstance(expect, PageExpectation):
        text = f"limit {expect.limit} offset {expect.offset} of {len(expect.rows)} matching rows {[r['id'] for r in expect.rows]}"
    else:
        text = repr(expect)
    return text if len(text) <= 1500 else text[:1500] + "..."
