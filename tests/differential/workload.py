"""A seeded random workload of pymilvus ``MilvusClient`` calls, each with the answer the model expects.

``Workload(seed, prefix=...).steps()`` yields ``Step`` values: a collection is
created and filled, then each round is one write-like operation followed by a
few reads, and the collection is read in full and dropped at the end. The
model (``model.py``) is updated as each write is generated, and each read
carries the model's answer, so a runner may execute consecutive reads
concurrently. Steps are only data; ``test_against_milvus_lite.py`` runs them
and ``compare.py`` judges the answers.

Adding an operation is one function ``(Workload) -> list[Step]`` and one line
in ``WRITES`` or ``READS``. Partitions come and go (created, released and
dropped; ``catalog.py``); writes name one and reads may name some. Aliases
come and go too (``catalog.py``), and calls may name the collection by one.
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pymilvus import AnnSearchRequest, CollectionSchema, DataType, MilvusClient, RRFRanker, WeightedRanker

from tests.differential.catalog import (
    alter_alias,
    create_alias,
    create_partition,
    drop_alias,
    drop_alias_step,
    drop_partition,
    has_partition,
    invalid_alias_op,
    invalid_partition_op,
    list_aliases,
    list_partitions,
    release_and_load_partition,
)
from tests.differential.data import (
    DIM,
    FIELDS,
    MAX_CAPACITY,
    MAX_LENGTH,
    NULLABLE_CANDIDATES,
    SPARSE_DIMS,
    CollectionSpec,
    Row,
    RowMaker,
)
from tests.differential.differences import Feature, model_only, skipped
from tests.differential.filters import INVALID_FILTERS, LITE_ACCEPTED_INVALID_FILTERS, Filter, FilterMaker
from tests.differential.model import DEFAULT_PARTITION, Model, drop_smallest, query_projection, search_projection
from tests.differential.scenarios import auto_id_upsert, duplicate_keys, partial_update, partition_rows
from tests.differential.steps import (
    STRONG,
    Expect,
    NamesExpectation,
    PageExpectation,
    SearchExpectation,
    Shape,
    Step,
    scoped,
    strong,
)


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    weight: float
    make: Callable[[Workload], list[Step]]


class Workload:
    """The generator's state: the random source, the collection, the model of its rows, the names that exist."""

    def __init__(self, seed: int, *, prefix: str, rounds: int = 16) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.prefix = prefix  # every collection this workload makes is named with it
        self.spec = CollectionSpec(
            name=f"{prefix}main",
            metric=self.rng.choice(("L2", "IP")),
            # a third of the seeds have a nullable vector field
            nullable=frozenset(f for f in NULLABLE_CANDIDATES if self.rng.random() < (0.35 if f == "v" else 0.6)),
        )
        self.spec.validate()
        self.model = Model()
        self.rows = RowMaker(self.rng, self.spec)
        self.filters = FilterMaker(self.rng, self.spec, self.model.rows, lambda: self.model.wide_ints)
        self.rounds = rounds
        self.collections: set[str] = set()  # the workload's collections that exist now
        self.created: set[str] = set()  # every name it created: what to drop if a run stops early
        self.partitions: list[str] = [DEFAULT_PARTITION]  # the main collection's partitions, oldest first
        self.aliases: list[str] = []  # the main collection's aliases
        self.created_aliases: set[str] = set()  # every alias it created: what to drop if a run stops early
        self.aliases_made = 0
        self._next_pk = 0
        self._temps = 0
        self.partitions_made = 0
        self._index = 0

    def steps(self) -> Iterator[Step]:
        yield from setup(self)
        for _ in range(self.rounds):
            yield from self._pick(WRITES).make(self)
            for _ in range(self.rng.randint(3, 8)):
                yield from self._pick(READS).make(self)
        yield from teardown(self)

    def _pick(self, ops: Sequence[Operation]) -> Operation:
        return self.rng.choices(ops, weights=[op.weight for op in ops])[0]

    def step(self, op: str, method: str, *, shape: Shape, read: bool, expect: object,
             features: frozenset[Feature] = frozenset(), keeps_rows: bool = False,
             peer_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> Step:  # fmt: skip
        """One step; ``keeps_rows`` marks a write that changes no rows (a partition's release or load)."""
        self._index += 1
        # A write milvus-lite does not run would leave the two servers with different rows.
        assert read or keeps_rows or expect is Expect.RAISES or not model_only(features), f"write {op} with {features}"
        return Step(index=self._index, op=op, method=method, kwargs=kwargs, shape=shape, read=read, expect=expect,
                    features=features, peer_kwargs=peer_kwargs)  # fmt: skip

    def filter(self, *, peer: bool = False) -> Filter:
        """A random filter the workload may send; with ``peer``, one milvus-lite answers like Milvus."""
        while True:
            f = self.filters.filter(self.rng.randint(0, 3))
            if not skipped(f.features) and not (peer and model_only(f.features)):
                return f

    def maybe_filter(self, chance: float = 0.7) -> Filter | None:
        return self.filter() if self.rng.random() < chance else None

    def fresh_pks(self, n: int) -> list[int]:
        first = self._next_pk
        self._next_pk += n
        return list(range(first, first + n))

    def absent_pks(self, n: int) -> list[int]:
        """Keys no row has ever had (beyond every key handed out so far)."""
        return [self._next_pk + 10_000 + k for k in range(n)]

    def last_temp_name(self) -> str:
        """The latest temporary collection's name (dropped by now, or never made)."""
        return f"{self.prefix}tmp{self._temps}"

    def live_pks(self, n: int) -> list[int]:
        pool = list(self.model.rows)
        return self.rng.sample(pool, min(n, len(pool)))

    def output_fields(self) -> list[str] | None:
        r = self.rng.random()
        if r < 0.2:
            return None
        if r < 0.45:
            return ["*"]
        return self.rng.sample(FIELDS, self.rng.randint(1, 3))

    def new_rows(self, pks: Sequence[int]) -> list[dict[str, Any]]:
        """New rows for ``pks``; never all with a null ``v`` (milvus-lite refuses such a batch, see README)."""
        live = list(self.model.rows.values())
        rows = [self.rows.row(pk, self.rng.choice(live) if live and self.rng.random() < 0.1 else None) for pk in pks]
        if rows and all(row["v"] is None for row in rows):
            rows[0]["v"] = self.rows.vector()
        return rows

    def vector_field(self) -> str:
        """The vector field a search reads: the dense ``v`` most of the time, else the sparse ``sp``."""
        return "sp" if self.rng.random() < 0.35 else "v"

    def query_vectors(self, field: str, n: int, *, distinct: bool = False) -> list[Any]:
        """``n`` query vectors for ``field``: some copied from live rows (exact ties), the rest random; ``distinct``
        (sparse only): no two equal weights in one vector."""
        live = [row[field] for row in self.model.rows.values() if row[field]]
        if distinct:
            live = [v for v in live if len(set(v.values())) == len(v)]
        return [
            (dict(self.rng.choice(live)) if field == "sp" else list(self.rng.choice(live)))
            if live and self.rng.random() < 0.4
            else (self.rows.sparse(distinct=distinct) if field == "sp" else self.rows.vector())
            for _ in range(n)
        ]

    @staticmethod
    def null_vectors(rows: Iterable[Row], *, searched: bool = False, projected: Sequence[str] | None = ()) -> bool:
        """Whether a null ``v`` would show in an answer over ``rows``: ``v`` is ``searched``, or ``projected`` (None:
        every field) holds it, and one of the rows has a null ``v`` (milvus-lite reads it as zeros, D26)."""
        shown = searched or projected is None or "*" in projected or "v" in projected
        return shown and any(row["v"] is None for row in rows)

    def temp_name(self) -> str:
        self._temps += 1
        return f"{self.prefix}tmp{self._temps}"

    def alias_name(self) -> str:
        self.aliases_made += 1
        name = f"{self.prefix}al{self.aliases_made}"
        self.created_aliases.add(name)
        return name

    def target(self) -> str:
        """The name a call gives the main collection: its own most of the time, else one of its aliases."""
        if self.aliases and self.rng.random() < 0.3:
            return self.rng.choice(self.aliases)
        return self.spec.name

    def partition_name(self) -> str:
        """A new partition's name (partition names are per collection: no prefix)."""
        self.partitions_made += 1
        return f"p{self.partitions_made}"

    def write_partition(self) -> str:
        """The partition a write goes to: one of the created ones half of the time, if any."""
        created = self.partitions[1:]
        return self.rng.choice(created) if created and self.rng.random() < 0.5 else DEFAULT_PARTITION

    def read_partitions(self) -> list[str] | None:
        """The ``partition_names`` of a read: None (every partition) most of the time, else a few of them."""
        if self.rng.random() < 0.65:
            return None
        return self.rng.sample(self.partitions, self.rng.randint(1, len(self.partitions)))

    def partition_kwargs(self, partition: str) -> dict[str, Any]:
        """``partition_name`` for a write into ``partition``; the default one is sometimes left unnamed."""
        return {} if partition == DEFAULT_PARTITION and self.rng.random() < 0.5 else {"partition_name": partition}

    def insert_rows(self, n: int, partition: str = DEFAULT_PARTITION) -> list[Step]:
        """An insert of ``n`` new rows into ``partition`` (now and then one with a scalar JSON document or an
        empty sparse vector)."""
        pks = self.fresh_pks(n)
        rows = self.new_rows(pks)
        features: frozenset[Feature] = frozenset()
        if self.rng.random() < 0.1 and not skipped(frozenset({Feature.JSON_SCALAR_DOCUMENT})):
            self.rng.choice(rows)["meta"] = self.rng.choice((3, "x", 1.5, True))
            features = frozenset({Feature.JSON_SCALAR_DOCUMENT})
        if self.rng.random() < 0.05 and not skipped(frozenset({Feature.EMPTY_SPARSE_ROW})):
            self.rng.choice(rows)["sp"] = self.rng.choice(({}, {3: 0.0}))
            features |= {Feature.EMPTY_SPARSE_ROW}
        self.model.write(rows, partition)
        return [self.step("insert", "insert", shape=Shape.VALUE, read=False,
                          expect={"insert_count": n, "ids": pks, "cost": 0}, features=features,
                          collection_name=self.target(), data=[self.rows.payload(r) for r in rows],
                          **self.partition_kwargs(partition))]  # fmt: skip


def _with(features: frozenset[Feature], flag: Feature, on: bool) -> frozenset[Feature]:
    return features | {flag} if on else features


# ---- the collection's life ---------------------------------------------------------------------------------------


def setup(w: Workload) -> list[Step]:
    name = w.spec.name
    w.collections.add(name)
    w.created.add(name)
    return [
        w.step("create", "create_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name, schema=w.spec.schema(), index_params=w.spec.index_params(),
               consistency_level=STRONG),
        w.step("has", "has_collection", shape=Shape.VALUE, read=True, expect=True, collection_name=name),
        w.step("describe", "describe_collection", shape=Shape.DESCRIBE, read=True, expect=Expect.ANSWERS,
               collection_name=name),
        *w.insert_rows(w.rng.randint(40, 80)),
    ]  # fmt: skip


def teardown(w: Workload) -> list[Step]:
    name = w.spec.name
    rows = w.model.matching(None)
    everything = [query_projection(row, None) for row in rows]
    steps = [drop_alias_step(w, alias) for alias in list(w.aliases)]
    if nulls := w.null_vectors(rows, projected=None):  # everything but v goes to both servers too
        others = [f for f in FIELDS if f != "v"]
        steps.append(w.step("final rows but v", "query", shape=Shape.ROWS, read=True,
                            expect=[query_projection(row, others) for row in rows],
                            **strong(collection_name=name, filter="id >= 0", output_fields=others)))  # fmt: skip
    steps += [
        w.step("final rows", "query", shape=Shape.ROWS, read=True, expect=everything,
               features=_with(frozenset(), Feature.NULL_VECTOR, nulls),
               **strong(collection_name=name, filter="id >= 0", output_fields=["*"])),
        w.step("final count", "query", shape=Shape.COUNT, read=True, expect=len(everything),
               **strong(collection_name=name, filter="", output_fields=["count(*)"])),
        w.step("drop", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS, collection_name=name),
    ]  # fmt: skip
    w.collections.discard(name)
    steps.append(
        w.step("has dropped", "has_collection", shape=Shape.VALUE, read=True, expect=False, collection_name=name)
    )
    steps.append(_list(w))
    return steps


# ---- writes ------------------------------------------------------------------------------------------------------


def insert(w: Workload) -> list[Step]:
    return w.insert_rows(w.rng.randint(1, 25), w.write_partition())


def upsert(w: Workload) -> list[Step]:
    """Upsert keys of one partition, and new ones, into that partition (a key upserted into another partition
    than its own is left out: Milvus versions differ on whether the old row stays)."""
    rng = w.rng
    partition = w.write_partition()
    own = w.model.in_partition(partition)
    existing = rng.sample(own, min(rng.randint(0, 12), len(own)))
    pks = existing + w.fresh_pks(rng.randint(0 if existing else 1, 4))
    rng.shuffle(pks)
    rows = w.new_rows(pks)
    w.model.write(rows, partition)
    return [w.step("upsert", "upsert", shape=Shape.VALUE, read=False,
                   expect={"upsert_count": len(pks), "ids": pks, "cost": 0},
                   collection_name=w.spec.name, data=[w.rows.payload(r) for r in rows],
                   **w.partition_kwargs(partition))]  # fmt: skip


def delete_ids(w: Workload) -> list[Step]:
    ids = w.live_pks(w.rng.randint(1, 8)) + w.absent_pks(w.rng.randint(0, 2))
    w.model.delete_ids(ids)
    return [w.step("delete ids", "delete", shape=Shape.PKS, read=False, expect=len(ids),
                   collection_name=w.target(), ids=ids)]  # fmt: skip


def delete_filter(w: Workload) -> list[Step]:
    f = w.filter(peer=True)
    for _ in range(10):  # prefer a filter that leaves most rows
        if len(w.model.matching(f)) <= 0.4 * len(w.model.rows):
            break
        f = w.filter(peer=True)
    scope: dict[str, Any] = {}
    if len(w.partitions) > 1 and w.rng.random() < 0.4 and not f.pk_lookup:
        scope = {"partition_name": w.rng.choice(w.partitions)}
    pks = w.model.delete_where(f, [scope["partition_name"]] if scope else None)
    # milvus-lite deletes a filter's matches in every partition (D19): it deletes the keys the model deletes.
    peer = {"collection_name": w.spec.name, "filter": f"id in {pks}"} if scope else None
    if f.pk_lookup:  # a delete by exactly `id in [...]` counts the keys it names, live or not, as a delete by ids does
        pks = sorted(f.keys)
    return [w.step("delete filter", "delete", shape=Shape.PKS, read=False, expect=len(pks), features=f.features,
                   peer_kwargs=peer, collection_name=w.spec.name, filter=f.text, **scope)]  # fmt: skip


def flush(w: Workload) -> list[Step]:
    return [w.step("flush", "flush", shape=Shape.ACK, read=False, expect=Expect.ANSWERS, collection_name=w.spec.name)]


def release_and_load(w: Workload) -> list[Step]:
    name = w.spec.name
    return [
        w.step("release", "release_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name),
        w.step("query released", "query", shape=Shape.ROWS, read=False, expect=Expect.RAISES,
               **strong(collection_name=name, filter="id >= 0")),
        w.step("load", "load_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS, collection_name=name),
    ]  # fmt: skip


def temporary_collection(w: Workload) -> list[Step]:
    """Create, look at and drop a second collection, in the quick form or with the workload's schema."""
    name = w.temp_name()
    if w.rng.random() < 0.5:
        create = w.step("create temp", "create_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                        collection_name=name, dimension=DIM, metric_type=w.rng.choice(("L2", "IP", "COSINE")),
                        consistency_level=STRONG)  # fmt: skip
    else:
        spec = CollectionSpec(name=name, metric=w.spec.metric, nullable=w.spec.nullable)
        create = w.step("create temp", "create_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                        collection_name=name, schema=spec.schema(), index_params=spec.index_params(),
                        consistency_level=STRONG)  # fmt: skip
    w.collections.add(name)
    w.created.add(name)
    steps = [
        create,
        w.step("has temp", "has_collection", shape=Shape.VALUE, read=True, expect=True, collection_name=name),
        w.step("describe temp", "describe_collection", shape=Shape.DESCRIBE, read=True, expect=Expect.ANSWERS,
               collection_name=name),
        _list(w),
        w.step("drop temp", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name),
    ]  # fmt: skip
    w.collections.discard(name)
    steps.append(w.step("has dropped temp", "has_collection", shape=Shape.VALUE, read=True, expect=False,
                        collection_name=name))  # fmt: skip
    return steps


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


# ---- reads -------------------------------------------------------------------------------------------------------


def query(w: Workload) -> list[Step]:
    f = w.filter()
    fields = w.output_fields()
    partitions = w.read_partitions()
    matching = w.model.matching(f, partitions)
    expect = [query_projection(row, fields) for row in matching]
    kwargs = scoped(strong(collection_name=w.target(), filter=f.text), partitions)
    if fields is not None:
        kwargs["output_fields"] = fields
    features = _with(f.features, Feature.NULL_VECTOR, w.null_vectors(matching, projected=fields))
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
    features = _with(f.features if f else frozenset(), Feature.NULL_VECTOR, w.null_vectors(matching, projected=fields))
    return [w.step("query page", "query", shape=Shape.PAGE, read=True,
                   expect=PageExpectation(rows=rows, limit=limit, offset=offset),
                   features=_with(features, Feature.PK_LOOKUP, f is not None and f.pk_lookup), **kwargs)]  # fmt: skip


def get(w: Workload) -> list[Step]:
    ids = w.live_pks(w.rng.randint(1, 6)) + w.absent_pks(w.rng.randint(0, 2))
    fields = w.output_fields()
    partitions = w.read_partitions()
    visible = {row["id"] for row in w.model.matching(None, partitions)}
    found = [w.model.rows[pk] for pk in sorted(ids) if pk in visible]
    kwargs = scoped(strong(collection_name=w.target(), ids=ids), partitions)
    if fields is not None:
        kwargs["output_fields"] = fields
    features = _with(frozenset(), Feature.NULL_VECTOR, w.null_vectors(found, projected=fields))
    return [w.step("get", "get", shape=Shape.ROWS, read=True, expect=[query_projection(r, fields) for r in found],
                   features=features, **kwargs)]  # fmt: skip


def count(w: Workload) -> list[Step]:
    f = w.maybe_filter()
    partitions = w.read_partitions()
    kwargs = strong(collection_name=w.target(), filter=f.text if f else "", output_fields=["count(*)"])
    features = _with(f.features if f else frozenset(), Feature.COUNT_ALL_IN_PARTITIONS, not f and partitions is not None)
    return [w.step("count", "query", shape=Shape.COUNT, read=True, expect=len(w.model.matching(f, partitions)),
                   features=features, **scoped(kwargs, partitions))]  # fmt: skip


def search(w: Workload) -> list[Step]:
    """An exact search of ``v`` or ``sp``: by vectors or (model only) by keys, with a filter, partitions, offset,
    grouping, output fields; on ``sp`` now and then with ``drop_ratio_search`` (model only)."""
    rng = w.rng
    field = w.vector_field()
    metric = w.spec.metric_of(field)
    partitions = w.read_partitions()
    drop_ratio = rng.choice((0.2, 0.5)) if field == "sp" and rng.random() < 0.2 else 0.0
    vectors = w.query_vectors(field, rng.randint(1, 3), distinct=drop_ratio > 0)
    keys = _search_keys(w, field, partitions, len(vectors)) if rng.random() < 0.15 else None
    if keys is not None:
        vectors = [w.model.rows[pk][field] for pk in keys]
        if any(len(set(q.values())) != len(q) for q in vectors if isinstance(q, dict)):
            drop_ratio = 0.0  # which of two equal weights is dropped would be the server's choice
    limit = rng.randint(1, 10)
    offset = 0 if rng.random() < 0.7 else rng.randint(1, 5)
    f = w.maybe_filter(0.6)
    fields = w.output_fields()
    features = _with(f.features if f else frozenset(), Feature.SEARCH_DEFAULT_OUTPUT, fields is None)
    if skipped(features):
        fields = ["id"]
        features = f.features if f else frozenset()
    matching = w.model.matching(f, partitions)
    features = _with(features, Feature.NULL_VECTOR, w.null_vectors(matching, searched=field == "v",
                                                                   projected=fields or []))  # fmt: skip
    features = _with(features, Feature.SEARCH_BY_IDS, keys is not None)
    features = _with(features, Feature.SPARSE_DROP_RATIO, drop_ratio > 0)
    queries = [drop_smallest(q, drop_ratio) for q in vectors] if drop_ratio else vectors
    ranked = [w.model.ranked(q, f, metric, partitions, field) for q in queries]
    group = rng.choice(("i", "b")) if rng.random() < 0.2 else None
    if group is not None:
        winners = [_group_winners(r, w.model.rows, group) for r in ranked]
        if all(g is not None for g in winners):
            ranked, offset = [g for g in winners if g is not None], 0
        else:
            group = None
    expect = SearchExpectation(
        ranked=tuple(tuple(r) for r in ranked),
        entities={row["id"]: search_projection(row, fields) for row in matching},
        limit=limit,
        offset=offset,
        metric=metric,
    )
    kwargs = scoped(strong(collection_name=w.target(), anns_field=field, limit=limit, filter=f.text if f else ""),
                    partitions)  # fmt: skip
    if keys is not None:
        kwargs["ids"] = keys
    else:
        kwargs["data"] = vectors
    if drop_ratio:
        kwargs["search_params"] = {"metric_type": "IP", "params": {"drop_ratio_search": drop_ratio}}
    if group is not None:
        kwargs["group_by_field"] = group
    if offset:
        kwargs["offset"] = offset
    if fields is not None:
        kwargs["output_fields"] = fields
    return [w.step("search", "search", shape=Shape.SEARCH, read=True, expect=expect, features=features, **kwargs)]


def _search_keys(w: Workload, field: str, partitions: list[str] | None, n: int) -> list[int] | None:
    """Keys to search by: live rows in the searched partitions whose ``field`` is not null (Milvus refuses any
    other); None when there are none."""
    pool = [row["id"] for row in w.model.matching(None, partitions) if row[field] is not None]
    return w.rng.sample(pool, min(n, len(pool))) if pool else None


def _group_winners(
    ranked: Sequence[tuple[int, float]], rows: Mapping[int, Row], field: str
) -> list[tuple[int, float]] | None:
    """A grouping search's hits (group size 1): the best row of each value of ``field``, best first; None when a
    group's best two rows tie (which one wins would be the server's choice)."""
    winners: dict[Any, tuple[int, float]] = {}
    runner_up: dict[Any, float] = {}
    for pk, d in ranked:
        value = rows[pk][field]
        if value not in winners:
            winners[value] = (pk, d)
        elif value not in runner_up:
            runner_up[value] = d
    if any(_close(winners[v][1], d) for v, d in runner_up.items()):
        return None
    return list(winners.values())


def _sub_limit(rng: random.Random, ranked: Sequence[Sequence[tuple[int, float]]]) -> int | None:
    """A sub search's limit (1..10) that cuts no query vector's ranking inside a tie (which key made the cut would
    be arbitrary, and so would the fused scores); None when every limit does."""
    fits = [
        n for n in range(1, 11)
        if all(len(r) <= n or not _close(r[n - 1][1], r[n][1]) for r in ranked)
    ]  # fmt: skip
    return rng.choice(fits) if fits else None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)


def _tied(hits: Sequence[tuple[int, float]]) -> bool:
    return any(_close(a[1], b[1]) for a, b in itertools.pairwise(hits))


def _normalised(metric: str, distance: float) -> float:
    """A distance mapped to [0, 1], larger better, as a weighted ranker with ``norm_score`` does."""
    if metric == "L2":
        return 1 - 2 * math.atan(distance) / math.pi
    return 0.5 + math.atan(distance) / math.pi


def _weighted(metric: str, weight: float, _rank: int, distance: float) -> float:
    return weight * _normalised(metric, distance)


def hybrid_search(w: Workload) -> list[Step]:
    """Two ANN searches, each on ``v`` or ``sp`` (their own vectors, filters and limits), fused by RRF or a weighted
    ranker."""
    rng = w.rng
    nq = rng.randint(1, 2)
    partitions = w.read_partitions()
    subs = []
    features: frozenset[Feature] = frozenset()
    for _ in range(2):
        field = w.vector_field()
        vectors = w.query_vectors(field, nq)
        f = w.maybe_filter(0.5)
        ranked = [w.model.ranked(q, f, w.spec.metric_of(field), partitions, field) for q in vectors]
        sub_limit = _sub_limit(rng, ranked)
        if sub_limit is None:
            return search(w)
        subs.append((field, vectors, f, [r[:sub_limit] for r in ranked], sub_limit))
        features |= f.features if f else frozenset()
        features = _with(features, Feature.NULL_VECTOR,
                         field == "v" and w.null_vectors(w.model.matching(f, partitions), searched=True))  # fmt: skip
    weigh: list[Callable[[int, float], float]]
    # RRF scores ranks, and the order of equal distances is arbitrary: only without ties inside a sub search's hits.
    if rng.random() < 0.5 and not any(_tied(hits) for _, _, _, ranked, _ in subs for hits in ranked):
        k = rng.choice((10, 60))
        ranker: Any = RRFRanker(k)
        weigh = [lambda rank, _d: 1 / (k + rank)] * 2
    else:
        weights = [rng.choice((0.2, 0.5, 1.0)) for _ in subs]
        ranker = WeightedRanker(*weights)
        weigh = [functools.partial(_weighted, w.spec.metric_of(field), wt)
                 for wt, (field, *_) in zip(weights, subs, strict=True)]  # fmt: skip
    fused = []
    for j in range(nq):
        scores: dict[int, float] = {}
        for (_, _, _, ranked, _), score in zip(subs, weigh, strict=True):
            for rank, (pk, d) in enumerate(ranked[j], start=1):
                scores[pk] = scores.get(pk, 0.0) + score(rank, d)
        fused.append(tuple(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))))
    fields = w.output_fields() or ["id"]
    visible = w.model.matching(None, partitions)
    features = _with(features, Feature.NULL_VECTOR, w.null_vectors(visible, projected=fields))
    limit = rng.randint(1, 10)
    offset = 0 if rng.random() < 0.7 else rng.randint(1, 3)
    expect = SearchExpectation(
        ranked=tuple(fused),
        entities={row["id"]: search_projection(row, fields) for row in visible},
        limit=limit,
        offset=offset,
        metric="IP",  # fused scores: larger is better
    )
    reqs = [
        AnnSearchRequest(data=vectors, anns_field=field, param={"metric_type": w.spec.metric_of(field)},
                         limit=sub_limit, expr=f.text if f else "")
        for field, vectors, f, _, sub_limit in subs
    ]  # fmt: skip
    kwargs = scoped(strong(collection_name=w.target(), reqs=reqs, ranker=ranker, limit=limit,
                             output_fields=fields), partitions)  # fmt: skip
    if offset:
        kwargs["offset"] = offset
    return [w.step("hybrid search", "hybrid_search", shape=Shape.SEARCH, read=True, expect=expect, features=features,
                   **kwargs)]  # fmt: skip


def describe(w: Workload) -> list[Step]:
    return [w.step("describe", "describe_collection", shape=Shape.DESCRIBE, read=True, expect=Expect.ANSWERS,
                   collection_name=w.spec.name)]  # fmt: skip


def has_collection(w: Workload) -> list[Step]:
    name = w.rng.choice((w.spec.name, w.last_temp_name(), f"{w.prefix}never"))
    return [w.step("has", "has_collection", shape=Shape.VALUE, read=True, expect=name in w.collections,
                   collection_name=name)]  # fmt: skip


def _list(w: Workload) -> Step:
    return w.step("list", "list_collections", shape=Shape.NAMES, read=True,
                  expect=NamesExpectation(prefix=w.prefix, names=tuple(sorted(w.collections))))  # fmt: skip


def list_collections(w: Workload) -> list[Step]:
    return [_list(w)]


def stats(w: Workload) -> list[Step]:
    return [w.step("stats", "get_collection_stats", shape=Shape.STATS, read=True, expect=w.model.written,
                   features=frozenset({Feature.ROW_COUNT}), collection_name=w.spec.name)]  # fmt: skip


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


WRITES: Final[Sequence[Operation]] = (
    Operation("insert", 5, insert),
    Operation("upsert", 4, upsert),
    Operation("delete ids", 2, delete_ids),
    Operation("delete filter", 2, delete_filter),
    Operation("flush", 1, flush),
    Operation("release and load", 0.5, release_and_load),
    Operation("create partition", 1.5, create_partition),
    Operation("drop partition", 0.8, drop_partition),
    Operation("release and load a partition", 0.8, release_and_load_partition),
    Operation("invalid partition op", 0.8, invalid_partition_op),
    Operation("create alias", 0.8, create_alias),
    Operation("drop alias", 0.4, drop_alias),
    Operation("alter alias", 0.4, alter_alias),
    Operation("invalid alias op", 0.5, invalid_alias_op),
    Operation("temporary collection", 0.7, temporary_collection),
    Operation("invalid write", 2, invalid_write),
    Operation("invalid create", 1, invalid_create),
    Operation("partial update", 2, partial_update),
    Operation("auto-id upsert", 0.3, auto_id_upsert),
    Operation("duplicate keys", 0.3, duplicate_keys),
    Operation("rows in two partitions", 0.3, partition_rows),
)

READS: Final[Sequence[Operation]] = (
    Operation("query", 7, query),
    Operation("query page", 2, query_page),
    Operation("get", 2, get),
    Operation("count", 3, count),
    Operation("search", 6, search),
    Operation("hybrid search", 2, hybrid_search),
    Operation("describe", 0.3, describe),
    Operation("has collection", 0.5, has_collection),
    Operation("list collections", 0.5, list_collections),
    Operation("list partitions", 0.4, list_partitions),
    Operation("has partition", 0.4, has_partition),
    Operation("list aliases", 0.3, list_aliases),
    Operation("stats", 0.5, stats),
    Operation("invalid read", 1.5, invalid_read),
)
