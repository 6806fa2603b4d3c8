"""The calls both servers must refuse (or, for a known difference, Strata must refuse): bad rows, bad
``create_collection`` arguments, bad reads. A refused call changes nothing, so the model is left as it is.

Each operation is a function ``(Workload) -> list[Step]`` listed in ``workload.WRITES`` or ``workload.READS``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pymilvus import CollectionSchema, DataType, MilvusClient

from tests.differential.data import DIM, MAX_CAPACITY, MAX_LENGTH, SPARSE_DIMS
from tests.differential.differences import Feature, skipped
from tests.differential.filters import INVALID_FILTERS, LITE_ACCEPTED_INVALID_FILTERS
from tests.differential.steps import Expect, Shape, Step, strong

if TYPE_CHECKING:
    from tests.differential.workload import Workload


def invalid_write(w: Workload) -> list[Step]:
    """A write both servers must refuse; the model is unchanged (a refused batch writes nothing)."""
    rng = w.rng
    name = w.spec.name
    good = w.new_rows(w.fresh_pks(rng.randint(0, 2)))
    bad = w.new_rows(w.fresh_pks(1))[0]
    bad["v"] = bad["v"] or w.rows.vector()
    kind = rng.choice(("dim", "varchar", "null", "type", "unknown field", "missing collection", "upsert dim",
                       "delete filter", "recreate", "nan", "array capacity", "array element", "sparse negative",
                       "sparse null"))  # fmt: skip
    features: frozenset[Feature] = frozenset()
    match kind:
        case "dim":
            bad["v"] = bad["v"][: rng.choice((DIM - 1, DIM // 2))]
        case "upsert dim":
            bad["v"] = bad["v"] + [0.5]
            return [w.step("invalid upsert", "upsert", shape=Shape.VALUE, read=False, expect=Expect.RAISES,
                           collection_name=name, data=[*good, bad])]  # fmt: skip
        case "varchar":
            bad["s"] = "x" * (MAX_LENGTH + rng.randint(1, 10))
        case "null":
            bad[rng.choice(("i", "b"))] = None
        case "type":
            bad["i"] = rng.choice(("seven", 1.5))
        case "unknown field":
            bad["extra"] = 1
        case "missing collection":
            name = f"{w.prefix}never"
        case "delete filter":
            return [w.step("invalid delete", "delete", shape=Shape.PKS, read=False, expect=Expect.RAISES,
                           collection_name=name, filter=rng.choice(INVALID_FILTERS))]  # fmt: skip
        case "recreate":
            return [w.step("recreate", "create_collection", shape=Shape.ACK, read=False, expect=Expect.RAISES,
                           collection_name=name, dimension=DIM // 2)]  # fmt: skip
        case "array capacity":
            bad["arr"] = [1] * (MAX_CAPACITY + 1)
        case "array element":
            bad["arr"] = [1, rng.choice(("x", 1.5))]
        case "sparse negative":
            bad["sp"] = {**bad["sp"], rng.randrange(SPARSE_DIMS): -rng.choice((0.5, 1.0))}
        case "sparse null":  # ``sp`` is not nullable
            bad["sp"] = None
        case "nan":
            bad["v"][rng.randrange(DIM)] = rng.choice((math.nan, math.inf, -math.inf))
            features = frozenset({Feature.LITE_ACCEPTS_INVALID})
    rows = [*good, bad]
    rng.shuffle(rows)
    return [w.step(f"invalid insert ({kind})", "insert", shape=Shape.VALUE, read=False, expect=Expect.RAISES,
                   features=features, collection_name=name, data=rows)]  # fmt: skip


def _schema(*fields: tuple[str, DataType, dict[str, Any]]) -> CollectionSchema:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    for name, dtype, params in fields:
        schema.add_field(name, dtype, **params)
    return schema


def invalid_create(w: Workload) -> list[Step]:
    """A create_collection both servers must refuse (Strata alone where milvus-lite accepts it)."""
    name = w.temp_name()
    pk = ("id", DataType.INT64, {"is_primary": True})
    vector = ("v", DataType.FLOAT_VECTOR, {"dim": DIM})
    lenient = frozenset({Feature.LITE_ACCEPTS_INVALID})
    cases: list[tuple[str, dict[str, Any], frozenset[Feature]]] = [
        ("name starting with a digit", {"collection_name": "1" + name, "dimension": DIM},
         frozenset({Feature.COLLECTION_NAME_CHARACTERS})),
        ("name with a dash", {"collection_name": name + "-x", "dimension": DIM},
         frozenset({Feature.COLLECTION_NAME_CHARACTERS})),
        ("empty name", {"collection_name": "", "dimension": DIM}, frozenset()),
        ("name of 256 characters", {"collection_name": name + "x" * (256 - len(name)), "dimension": DIM},
         frozenset({Feature.LONG_COLLECTION_NAME})),
        ("dimension 0", {"collection_name": name, "dimension": 0}, frozenset()),
        ("unknown metric", {"collection_name": name, "dimension": DIM, "metric_type": "BOGUS"}, frozenset()),
        ("no primary key", {"collection_name": name, "schema": _schema(("a", DataType.INT64, {}), vector)},
         frozenset()),
        ("no vector", {"collection_name": name, "schema": _schema(pk, ("a", DataType.INT64, {}))}, frozenset()),
        ("duplicate field", {"collection_name": name, "schema": _schema(pk, ("a", DataType.INT64, {}),
                                                                         ("a", DataType.DOUBLE, {}), vector)},
         frozenset()),
        ("nullable primary key", {"collection_name": name, "schema": _schema(
            ("id", DataType.INT64, {"is_primary": True, "nullable": True}), vector)}, frozenset()),
        ("DOUBLE primary key", {"collection_name": name, "schema": _schema(
            ("id", DataType.DOUBLE, {"is_primary": True}), vector)}, frozenset()),
        ("field named $meta", {"collection_name": name, "schema": _schema(pk, ("$meta", DataType.INT64, {}), vector)},
         frozenset()),
        ("dimension 100000", {"collection_name": name, "dimension": 100_000}, lenient),
        ("VARCHAR without max_length", {"collection_name": name, "schema": _schema(
            pk, ("s", DataType.VARCHAR, {}), vector)}, lenient),
        ("VARCHAR max_length 70000", {"collection_name": name, "schema": _schema(
            pk, ("s", DataType.VARCHAR, {"max_length": 70_000}), vector)}, lenient),
        ("field name with a space", {"collection_name": name, "schema": _schema(pk, ("a b", DataType.INT64, {}),
                                                                                 vector)}, lenient),
        ("100 shards", {"collection_name": name, "dimension": DIM, "num_shards": 100}, lenient),
    ]  # fmt: skip
    label, kwargs, features = w.rng.choice([c for c in cases if not skipped(c[2])])
    steps = [w.step(f"invalid create ({label})", "create_collection", shape=Shape.ACK, read=False,
                    expect=Expect.RAISES, features=features, **kwargs)]  # fmt: skip
    if kwargs["collection_name"] and not features & {Feature.COLLECTION_NAME_CHARACTERS, Feature.LONG_COLLECTION_NAME}:
        # The quick form creates the collection before its index is refused (pymilvus makes two calls), so the
        # collection may exist: drop it (dropping a missing collection succeeds). A name Milvus refuses was
        # never created (milvus-lite is not sent the ones it accepts), and dropping it is refused too.
        w.created.add(kwargs["collection_name"])
        steps.append(w.step("drop refused", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                            collection_name=kwargs["collection_name"]))  # fmt: skip
    return steps


def invalid_read(w: Workload) -> list[Step]:
    """A read both servers must refuse (or, for a known difference, Strata must refuse)."""
    rng = w.rng
    name = w.spec.name
    bad = rng.choice(INVALID_FILTERS)
    vector = w.rows.vector()
    choices: list[tuple[str, str, dict[str, Any], frozenset[Feature]]] = [
        ("invalid query filter", "query", strong(collection_name=name, filter=bad), frozenset()),
        ("invalid search filter", "search", strong(collection_name=name, data=[vector], anns_field="v", limit=3, filter=bad),
         frozenset()),
        ("invalid count filter", "query", strong(collection_name=name, filter=bad, output_fields=["count(*)"]),
         frozenset()),
        ("query missing collection", "query", strong(collection_name=f"{w.prefix}never", filter="id >= 0"),
         frozenset()),
        ("search missing collection", "search", strong(collection_name=f"{w.prefix}never", data=[vector], anns_field="v", limit=3),
         frozenset()),
        ("query with an array filter on a string", "query",
         strong(collection_name=name, filter=rng.choice(LITE_ACCEPTED_INVALID_FILTERS)),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("query missing partition", "query",
         strong(collection_name=name, filter="id >= 0", partition_names=[*w.partitions[1:], "p0"]),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("search missing partition", "search",
         strong(collection_name=name, data=[vector], anns_field="v", limit=3, partition_names=["p0"]),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("search wrong dim", "search", strong(collection_name=name, data=[vector[: DIM // 2]], anns_field="v", limit=3),
         frozenset()),
        ("unknown output field", "query",
         strong(collection_name=name, filter="id >= 0", output_fields=["i", "nope"]),
         frozenset({Feature.UNKNOWN_OUTPUT_FIELD})),
        ("search unknown output field", "search",
         strong(collection_name=name, data=[vector], anns_field="v", limit=3, output_fields=["i", "nope"]),
         frozenset({Feature.UNKNOWN_OUTPUT_FIELD})),
        ("empty filter without limit", "query", strong(collection_name=name, filter=""),
         frozenset({Feature.EMPTY_FILTER_NO_LIMIT})),
        ("count with fields", "query", strong(collection_name=name, filter="id >= 0", output_fields=["count(*)", "i"]),
         frozenset({Feature.COUNT_WITH_FIELDS})),
        ("search with another metric", "search",
         strong(collection_name=name, data=[vector], anns_field="v", limit=3,
                 search_params={"metric_type": "IP" if w.spec.metric == "L2" else "L2"}),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("search limit 16385", "search", strong(collection_name=name, data=[vector], anns_field="v", limit=16385),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("search limit + offset 17000", "search",
         strong(collection_name=name, data=[vector], anns_field="v", limit=16000, offset=1000),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("query negative offset", "query", strong(collection_name=name, filter="id >= 0", limit=5, offset=-1),
         frozenset({Feature.LITE_ACCEPTS_INVALID})),
        ("sparse search with L2", "search",
         strong(collection_name=name, data=[w.rows.sparse()], anns_field="sp", limit=3,
                search_params={"metric_type": "L2"}), frozenset()),
        ("sparse search with a dense vector", "search",
         strong(collection_name=name, data=[vector], anns_field="sp", limit=3), frozenset()),
        ("search by a missing key", "search",
         strong(collection_name=name, ids=w.absent_pks(1), anns_field=rng.choice(("v", "sp")), limit=3),
         frozenset({Feature.SEARCH_BY_IDS})),
    ]  # fmt: skip
    allowed = [c for c in choices if not skipped(c[3])]
    op, method, kwargs, features = rng.choice(allowed)
    return [w.step(op, method, shape=Shape.ACK, read=True, expect=Expect.RAISES, features=features, **kwargs)]
