"""A seeded random workload of pymilvus ``MilvusClient`` calls, each with the answer the model expects.

``Workload(seed, prefix=...).steps()`` yields ``Step`` values: a collection is
created and filled, then each round is one write-like operation followed by a
few reads, and the collection is read in full and dropped at the end. The
model (``model.py``) is updated as each write is generated, and each read
carries the model's answer, so a runner may execute consecutive reads
concurrently. Steps are only data; ``test_against_milvus_lite.py`` runs them
and ``compare.py`` judges the answers.

The operations live in modules by kind: row writes in ``writes.py``, reads in
``reads.py``, searches in ``searches.py``, refused calls in ``refusals.py``,
partitions and aliases in ``catalog.py``, write semantics on temporary
collections in ``scenarios.py``. Adding an operation is one function
``(Workload) -> list[Step]`` there and one line in ``WRITES`` or ``READS``
here. Partitions come and go (created, released and dropped); writes name one
and reads may name some. Aliases come and go too, and calls may name the
collection by one.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

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
from tests.differential.data import FIELDS, NULLABLE_CANDIDATES, CollectionSpec, Row, RowMaker
from tests.differential.differences import Feature, model_only, skipped, with_feature
from tests.differential.filter_tree import Filter
from tests.differential.filters import FilterMaker
from tests.differential.model import DEFAULT_PARTITION, Model, query_projection
from tests.differential.reads import (
    count,
    describe,
    get,
    has_collection,
    list_collections,
    list_step,
    query,
    query_page,
    stats,
)
from tests.differential.refusals import invalid_create, invalid_read, invalid_write
from tests.differential.scenarios import auto_id_upsert, duplicate_keys, partial_update, partition_rows
from tests.differential.searches import hybrid_search, search
from tests.differential.steps import STRONG, Expect, Shape, Step, strong
from tests.differential.writes import (
    delete_filter,
    delete_ids,
    flush,
    insert,
    release_and_load,
    temporary_collection,
    upsert,
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
               features=with_feature(frozenset(), Feature.NULL_VECTOR, nulls),
               **strong(collection_name=name, filter="id >= 0", output_fields=["*"])),
        w.step("final count", "query", shape=Shape.COUNT, read=True, expect=len(everything),
               **strong(collection_name=name, filter="", output_fields=["count(*)"])),
        w.step("drop", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS, collection_name=name),
    ]  # fmt: skip
    w.collections.discard(name)
    steps.append(
        w.step("has dropped", "has_collection", shape=Shape.VALUE, read=True, expect=False, collection_name=name)
    )
    steps.append(list_step(w))
    return steps


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
