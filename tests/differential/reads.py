"""The workload's reads other than searches: query, a query page, get, count, describe, has and list collections,
stats. Each carries the model's answer.

Each operation is a function ``(Workload) -> list[Step]`` listed in ``workload.READS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.differential.differences import Feature, with_feature
from tests.differential.model import query_projection
from tests.differential.steps import Expect, NamesExpectation, PageExpectation, Shape, Step, scoped, strong

if TYPE_CHECKING:
    from tests.differential.workload import Workload


def query(w: Workload) -> list[Step]:
    f = w.filter()
    fields = w.output_fields()
    partitions = w.read_partitions()
    matching = w.model.matching(f, partitions)
    expect = [query_projection(row, fields) for row in matching]
    kwargs = scoped(strong(collection_name=w.target(), filter=f.text), partitions)
    if fields is not None:
        kwargs["output_fields"] = fields
    features = with_feature(f.features, Feature.NULL_VECTOR, w.null_vectors(matching, projected=fields))
    return [w.step("query", "query", shape=Shape.ROWS, read=True, expect=expect, features=features, **kwargs)]


def query_page(w: Workload) -> list[Step]:
    rng = w.rng
    f = w.maybe_filter()
    fields = w.output_fields()
    limit = rng.randint(1, 20)
    offset = 0 if rng.random() < 0.5 else rng.randint(1, 10)
    partitions = w.read_partitions()
    matching = w.model.matching(f, partitions)
    rows = tuple(query_projection(row, fields) for row in matching)
    kwargs = scoped(strong(collection_name=w.spec.name, filter=f.text if f else "", limit=limit), partitions)
    if offset:
        kwargs["offset"] = offset
    if fields is not None:
        kwargs["output_fields"] = fields
    features = with_feature(f.features if f else frozenset(), Feature.NULL_VECTOR, w.null_vectors(matching, projected=fields))
    return [w.step("query page", "query", shape=Shape.PAGE, read=True,
                   expect=PageExpectation(rows=rows, limit=limit, offset=offset),
                   features=with_feature(features, Feature.PK_LOOKUP, f is not None and f.pk_lookup), **kwargs)]  # fmt: skip


def get(w: Workload) -> list[Step]:
    ids = w.live_pks(w.rng.randint(1, 6)) + w.absent_pks(w.rng.randint(0, 2))
    fields = w.output_fields()
    partitions = w.read_partitions()
    visible = {row["id"] for row in w.model.matching(None, partitions)}
    found = [w.model.rows[pk] for pk in sorted(ids) if pk in visible]
    kwargs = scoped(strong(collection_name=w.target(), ids=ids), partitions)
    if fields is not None:
        kwargs["output_fields"] = fields
    features = with_feature(frozenset(), Feature.NULL_VECTOR, w.null_vectors(found, projected=fields))
    return [w.step("get", "get", shape=Shape.ROWS, read=True, expect=[query_projection(r, fields) for r in found],
                   features=features, **kwargs)]  # fmt: skip


def count(w: Workload) -> list[Step]:
    f = w.maybe_filter()
    partitions = w.read_partitions()
    kwargs = strong(collection_name=w.target(), filter=f.text if f else "", output_fields=["count(*)"])
    features = with_feature(f.features if f else frozenset(), Feature.COUNT_ALL_IN_PARTITIONS, not f and partitions is not None)
    return [w.step("count", "query", shape=Shape.COUNT, read=True, expect=len(w.model.matching(f, partitions)),
                   features=features, **scoped(kwargs, partitions))]  # fmt: skip



def describe(w: Workload) -> list[Step]:
    return [w.step("describe", "describe_collection", shape=Shape.DESCRIBE, read=True, expect=Expect.ANSWERS,
                   collection_name=w.spec.name)]  # fmt: skip


def has_collection(w: Workload) -> list[Step]:
    name = w.rng.choice((w.spec.name, w.last_temp_name(), f"{w.prefix}never"))
    return [w.step("has", "has_collection", shape=Shape.VALUE, read=True, expect=name in w.collections,
                   collection_name=name)]  # fmt: skip


def list_step(w: Workload) -> Step:
    return w.step("list", "list_collections", shape=Shape.NAMES, read=True,
                  expect=NamesExpectation(prefix=w.prefix, names=tuple(sorted(w.collections))))  # fmt: skip


def list_collections(w: Workload) -> list[Step]:
    return [list_step(w)]


def stats(w: Workload) -> list[Step]:
    return [w.step("stats", "get_collection_stats", shape=Shape.STATS, read=True, expect=w.model.written,
                   features=frozenset({Feature.ROW_COUNT}), collection_name=w.spec.name)]  # fmt: skip

