"""The workload's row writes: insert, upsert, delete by keys or by filter, flush, release and load, and a temporary
collection made, looked at and dropped.

Each operation is a function ``(Workload) -> list[Step]`` listed in ``workload.WRITES``; it updates the model as
it generates the step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.differential.data import DIM, CollectionSpec
from tests.differential.reads import list_step
from tests.differential.steps import STRONG, Expect, Shape, Step, strong

if TYPE_CHECKING:
    from tests.differential.workload import Workload


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
        list_step(w),
        w.step("drop temp", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name),
    ]  # fmt: skip
    w.collections.discard(name)
    steps.append(w.step("has dropped temp", "has_collection", shape=Shape.VALUE, read=True, expect=False,
                        collection_name=name))  # fmt: skip
    return steps
