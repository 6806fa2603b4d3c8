"""Write semantics of Milvus 2.6 that milvus-lite answers differently: small scenarios of their own.

The workload's model holds one row per key; these need more, so each runs on
a temporary collection (``id`` INT64, ``x`` INT64, ``v`` FLOAT_VECTOR, FLAT
L2), with its own little model, and ends by dropping it. Every write goes to
both servers and answers alike; reads where milvus-lite differs are checked
against the model only (``differences.py``: D27-D29), the others against both.

* ``auto_id_upsert``: an upsert into an auto-id collection gives its rows new
  keys and deletes the rows of the keys it names (D27);
* ``duplicate_keys``: one insert naming a key twice: ``count(*)`` counts every
  row (D28), a query or search returns the last one, before and after a flush;
* ``partition_rows``: a key inserted into two partitions has a row in each; a
  delete or upsert naming a partition changes the row there only (D29).

``partial_update`` (merge mode) runs on the workload's own collection: keys of
one partition get some fields replaced, and new keys all required fields;
milvus-lite answers it as Milvus does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pymilvus import DataType, MilvusClient

from tests.differential.data import DIM, FIELDS
from tests.differential.differences import Feature
from tests.differential.steps import STRONG, Expect, SearchExpectation, Shape, Step, strong

if TYPE_CHECKING:
    from tests.differential.workload import Workload

AUTO_ID = frozenset({Feature.AUTO_ID_UPSERT})
DUPLICATES = frozenset({Feature.DUPLICATE_KEY_ROWS})
PARTITION_ROWS = frozenset({Feature.PARTITION_ROWS})


def _create(w: Workload, *, auto_id: bool = False) -> tuple[str, list[Step]]:
    name = w.temp_name()
    schema = MilvusClient.create_schema(auto_id=auto_id, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("x", DataType.INT64)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
    index = MilvusClient.prepare_index_params()
    index.add_index("v", index_type="FLAT", metric_type="L2")
    w.collections.add(name)
    w.created.add(name)
    return name, [w.step("create scenario", "create_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                         collection_name=name, schema=schema, index_params=index, consistency_level=STRONG)]


def _drop(w: Workload, name: str) -> Step:
    w.collections.discard(name)
    return w.step("drop scenario", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                  collection_name=name)


def _row(w: Workload, pk: int | None, x: int) -> dict[str, Any]:
    row: dict[str, Any] = {"x": x, "v": w.rows.vector()}
    if pk is not None:
        row["id"] = pk
    return row


def _count(w: Workload, name: str, expect: int, features: frozenset[Feature] = frozenset(), **kwargs: Any) -> Step:
    return w.step("scenario count", "query", shape=Shape.COUNT, read=True, expect=expect, features=features,
                  **strong(collection_name=name, filter=kwargs.pop("filter", ""), output_fields=["count(*)"], **kwargs))


def _rows(w: Workload, name: str, rows: Sequence[dict[str, Any]], features: frozenset[Feature] = frozenset(),
          **kwargs: Any) -> Step:  # fmt: skip
    expect = sorted(({"id": r["id"], "x": r["x"]} for r in rows), key=lambda r: r["id"])
    return w.step("scenario rows", "query", shape=Shape.ROWS, read=True, expect=expect, features=features,
                  **strong(collection_name=name, filter=kwargs.pop("filter", "id >= 0"), output_fields=["x"], **kwargs))


def auto_id_upsert(w: Workload) -> list[Step]:
    """Upserts naming a key no row has, twice: each inserts a row under a new key (Milvus 2.6); milvus-lite keeps
    the key, so its second upsert replaces the first."""
    name, steps = _create(w, auto_id=True)
    n = w.rng.randint(1, 4)
    key = 10**12 + w.rng.randint(0, 1000)
    steps += [
        w.step("scenario insert", "insert", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name, data=[_row(w, None, i) for i in range(n)]),
        w.step("auto-id upsert", "upsert", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name, data=[_row(w, key, 100)]),
        _count(w, name, n + 1),
        _rows(w, name, [], AUTO_ID, filter=f"id == {key}"),  # the row has a new key
        w.step("auto-id upsert", "upsert", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name, data=[_row(w, key, 101)]),
        _count(w, name, n + 2, AUTO_ID),  # the key named deletes nothing: no row has it
        _count(w, name, 2, AUTO_ID, filter="x >= 100"),
        _drop(w, name),
    ]  # fmt: skip
    return steps


def duplicate_keys(w: Workload) -> list[Step]:
    """One insert naming keys twice or three times: every row counts, reads see the last one of each key."""
    name, steps = _create(w)
    keys = [k for k in range(w.rng.randint(2, 5)) for _ in range(w.rng.randint(1, 3))]
    w.rng.shuffle(keys)
    rows = [_row(w, pk, x) for x, pk in enumerate(keys)]
    last = {r["id"]: r for r in rows}  # the last row of each key
    query = w.rows.vector()
    ranked = sorted(((pk, sum((a - b) ** 2 for a, b in zip(r["v"], query, strict=True))) for pk, r in last.items()),
                    key=lambda hit: hit[1])  # fmt: skip
    search = SearchExpectation(ranked=(tuple(ranked),), entities={pk: {"x": r["x"]} for pk, r in last.items()},
                               limit=len(last), offset=0, metric="L2")  # fmt: skip
    reads = [
        _count(w, name, len(rows), DUPLICATES),
        _rows(w, name, list(last.values())),
        w.step("scenario search", "search", shape=Shape.SEARCH, read=True, expect=search,
               **strong(collection_name=name, data=[query], limit=len(last), output_fields=["x"])),
    ]  # fmt: skip
    gone = w.rng.choice(keys)
    left = [r for r in rows if r["id"] != gone]
    steps += [
        w.step("insert duplicate keys", "insert", shape=Shape.VALUE, read=False,
               expect={"insert_count": len(rows), "ids": keys, "cost": 0}, collection_name=name, data=rows),
        *reads,
        w.step("scenario flush", "flush", shape=Shape.ACK, read=False, expect=Expect.ANSWERS, collection_name=name),
        *[_copy(w, step) for step in reads],
        w.step("scenario delete", "delete", shape=Shape.PKS, read=False, expect=1, collection_name=name, ids=[gone]),
        _count(w, name, len(left), DUPLICATES),
        _rows(w, name, [r for pk, r in last.items() if pk != gone]),
        _drop(w, name),
    ]  # fmt: skip
    return steps


def _copy(w: Workload, step: Step) -> Step:
    return w.step(step.op, step.method, shape=step.shape, read=step.read, expect=step.expect, features=step.features,
                  **step.kwargs)


def partition_rows(w: Workload) -> list[Step]:
    """Keys in two partitions, then deletes and an upsert naming one: the other partition's rows stay."""
    name, steps = _create(w)
    rng = w.rng
    model: dict[str, dict[int, dict[str, Any]]] = {"p1": {}, "p2": {}}
    steps += [w.step("scenario partition", "create_partition", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                     collection_name=name, partition_name=p) for p in model]  # fmt: skip
    x = 0

    def write(method: str, partition: str, pks: Sequence[int]) -> Step:
        nonlocal x
        rows = []
        for pk in pks:
            rows.append(_row(w, pk, x))
            x += 1
        model[partition].update({r["id"]: r for r in rows})
        answer = {"insert_count" if method == "insert" else "upsert_count": len(rows), "ids": list(pks), "cost": 0}
        return w.step(f"scenario {method}", method, shape=Shape.VALUE, read=False, expect=answer,
                      collection_name=name, data=rows, partition_name=partition)

    def reads() -> list[Step]:
        newest: dict[int, dict[str, Any]] = {}
        for rows in model.values():  # x grows with every write: the larger is the newer row
            for pk, r in rows.items():
                if pk not in newest or r["x"] > newest[pk]["x"]:
                    newest[pk] = r
        return [
            _count(w, name, sum(len(rows) for rows in model.values()), PARTITION_ROWS),
            _rows(w, name, list(newest.values()), PARTITION_ROWS),
            *[_rows(w, name, list(rows.values()), PARTITION_ROWS, partition_names=[p]) for p, rows in model.items()],
        ]

    both = list(range(0, 4))
    steps += [write("insert", "p1", [*both, 10, 11]), write("insert", "p2", both), *reads()]
    if rng.random() < 0.5:
        steps.append(w.step("scenario flush", "flush", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
                            collection_name=name))  # fmt: skip
    gone = rng.sample(both, 2)
    for pk in gone:
        model["p2"].pop(pk)
    steps += [w.step("scenario delete", "delete", shape=Shape.PKS, read=False, expect=len(gone),
                     collection_name=name, ids=gone, partition_name="p2"), *reads()]  # fmt: skip
    steps += [write("upsert", "p2", [10, rng.choice(both)]), *reads()]
    steps.append(_drop(w, name))
    return steps


def partial_update(w: Workload) -> list[Step]:
    """``upsert(..., partial_update=True)`` into one partition of the workload's collection: its own keys get some
    fields replaced (the others keep their values); new keys, when there are any, are given every required field.
    A new key without a required field is refused and changes nothing."""
    rng = w.rng
    partition = w.write_partition()
    own = w.model.in_partition(partition)
    existing = rng.sample(own, min(rng.randint(0, 6), len(own)))
    new = w.fresh_pks(rng.randint(0 if existing else 1, 3))
    required = [f for f in FIELDS if f != "id" and f not in w.spec.nullable]  # no field has a default value
    optional = sorted(w.spec.nullable)
    if new or rng.random() < 0.3:
        fields = [*required, *rng.sample(optional, rng.randint(0, len(optional)))]
    else:
        fields = rng.sample([f for f in FIELDS if f != "id"], rng.randint(1, 3))
    pks = existing + new
    rng.shuffle(pks)
    given = []
    for pk in pks:
        fresh = w.rows.row(pk)
        given.append({"id": pk, **{f: fresh[f] for f in fields}})
    if "v" in fields and all(row["v"] is None for row in given):
        given[0]["v"] = w.rows.vector()  # milvus-lite refuses a batch whose every v is null
    if new and rng.random() < 0.2:  # a new key without a required field
        dropped = rng.choice(required)
        data = [{k: v for k, v in row.items() if k != dropped} for row in given]
        return [w.step("invalid partial update", "upsert", shape=Shape.VALUE, read=False, expect=Expect.RAISES,
                       collection_name=w.spec.name, data=data, partial_update=True, partition_name=partition)]
    merged = []
    for row in given:
        base = dict(w.model.rows[row["id"]]) if row["id"] in w.model.rows else {f: None for f in FIELDS}
        merged.append({**base, **row})
    w.model.write(merged, partition)  # a null v shows in later reads, which check it (Workload.null_vectors)
    return [w.step("partial update", "upsert", shape=Shape.VALUE, read=False,
                   expect={"upsert_count": len(pks), "ids": pks, "cost": 0}, collection_name=w.spec.name,
                   data=given, partial_update=True, **w.partition_kwargs(partition))]  # fmt: skip


__all__ = ["auto_id_upsert", "duplicate_keys", "partial_update", "partition_rows"]
