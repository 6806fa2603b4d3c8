"""The workload's partition and alias calls: create, release, load and drop partitions; create, move and drop aliases.

Each operation is a function ``(Workload) -> list[Step]`` listed in
``workload.WRITES`` or ``workload.READS``; the workload keeps the names that
exist (``Workload.partitions``, ``Workload.aliases``) and the model the
partition of every row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from tests.differential.data import DIM
from tests.differential.differences import Feature
from tests.differential.model import DEFAULT_PARTITION, query_projection
from tests.differential.steps import STRONG, Expect, NamesExpectation, Shape, Step, strong

if TYPE_CHECKING:
    from tests.differential.workload import Workload


MAX_PARTITIONS: Final = 4  # the default one and up to 3 created
_LOAD_STATE: Final = frozenset({Feature.PARTITION_LOAD_STATE})


def create_partition(w: Workload) -> list[Step]:
    """A new partition of the loaded collection (loaded with it), and a few rows in it."""
    if len(w.partitions) >= MAX_PARTITIONS:
        return drop_partition(w)
    name = w.spec.name
    partition = w.partition_name()
    w.partitions.append(partition)
    return [
        w.step("create partition", "create_partition", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name, partition_name=partition),
        w.step("has partition", "has_partition", shape=Shape.VALUE, read=True, expect=True, collection_name=name,
               partition_name=partition),
        list_partitions_step(w),
        *w.insert_rows(w.rng.randint(1, 15), partition),
    ]  # fmt: skip


def drop_partition(w: Workload) -> list[Step]:
    """Release one created partition (Milvus drops only released ones), then drop it with its rows."""
    created = w.partitions[1:]
    if not created:
        return create_partition(w)
    name = w.spec.name
    partition = w.rng.choice(created)
    w.partitions.remove(partition)
    w.model.drop_partition(partition)
    return [
        w.step("release partition", "release_partitions", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               features=_LOAD_STATE, keeps_rows=True, collection_name=name, partition_names=[partition]),
        w.step("drop partition", "drop_partition", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=name, partition_name=partition),
        w.step("has dropped partition", "has_partition", shape=Shape.VALUE, read=True, expect=False,
               collection_name=name, partition_name=partition),
        list_partitions_step(w),
    ]  # fmt: skip


def release_and_load_partition(w: Workload) -> list[Step]:
    """Release one partition, fail to read it alone, read the rest, load it back."""
    if len(w.partitions) < 2:
        return create_partition(w)
    name = w.spec.name
    partition = w.rng.choice(w.partitions)
    others = [p for p in w.partitions if p != partition]
    rows = [query_projection(row, None) for row in w.model.matching(None, others)]
    return [
        w.step("release partition", "release_partitions", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               features=_LOAD_STATE, keeps_rows=True, collection_name=name, partition_names=[partition]),
        w.step("query released partition", "query", shape=Shape.ROWS, read=False, expect=Expect.RAISES,
               features=_LOAD_STATE, **strong(collection_name=name, filter="id >= 0", partition_names=[partition])),
        w.step("query loaded partitions", "query", shape=Shape.ROWS, read=True, expect=rows, features=_LOAD_STATE,
               **strong(collection_name=name, filter="id >= 0", output_fields=["*"], partition_names=others)),
        w.step("load partition", "load_partitions", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               features=_LOAD_STATE, keeps_rows=True, collection_name=name, partition_names=[partition]),
    ]  # fmt: skip


def invalid_partition_op(w: Workload) -> list[Step]:
    """A partition call both servers must refuse; nothing changes."""
    rng = w.rng
    name = w.spec.name
    missing = f"p{w.partitions_made + 100}"
    rows = w.new_rows(w.fresh_pks(rng.randint(1, 3)))
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("insert into a missing partition", "insert",
         {"collection_name": name, "data": [w.rows.payload(r) for r in rows], "partition_name": missing}),
        ("upsert into a missing partition", "upsert",
         {"collection_name": name, "data": [w.rows.payload(r) for r in rows], "partition_name": missing}),
        ("drop the default partition", "drop_partition", {"collection_name": name, "partition_name": DEFAULT_PARTITION}),
        ("create a partition named with a space", "create_partition", {"collection_name": name, "partition_name": "p x"}),
        ("create a partition in a missing collection", "create_partition",
         {"collection_name": f"{w.prefix}never", "partition_name": "p1"}),
        ("delete in a missing partition", "delete",
         {"collection_name": name, "filter": "id >= 0", "partition_name": missing}),
    ]  # fmt: skip
    if len(w.partitions) > 1:
        cases.append(("drop a loaded partition", "drop_partition",
                      {"collection_name": name, "partition_name": rng.choice(w.partitions[1:])}))  # fmt: skip
    label, method, kwargs = rng.choice(cases)
    shape = Shape.PKS if method == "delete" else Shape.VALUE if method in ("insert", "upsert") else Shape.ACK
    # milvus-lite drops a loaded partition and accepts any partition name.
    features = {
        "drop a loaded partition": frozenset({Feature.LITE_ACCEPTS_INVALID}),
        "create a partition named with a space": frozenset({Feature.COLLECTION_NAME_CHARACTERS}),
    }.get(label, frozenset())
    return [w.step(f"invalid partition op ({label})", method, shape=shape, read=False, expect=Expect.RAISES,
                   features=features, **kwargs)]  # fmt: skip


MAX_ALIASES: Final = 2
# milvus-lite drops a collection that has aliases, and a collection named by its alias.
_LITE_DROPS: Final = frozenset({Feature.LITE_ACCEPTS_INVALID})


def list_aliases_step(w: Workload) -> Step:
    return w.step("list aliases", "list_aliases", shape=Shape.NAMES, read=True,
                  expect=NamesExpectation(prefix="", names=tuple(sorted(w.aliases))),
                  collection_name=w.spec.name)  # fmt: skip


def drop_alias_step(w: Workload, alias: str) -> Step:
    w.aliases.remove(alias)
    return w.step("drop alias", "drop_alias", shape=Shape.ACK, read=False, expect=Expect.ANSWERS, alias=alias)


def create_alias(w: Workload) -> list[Step]:
    """A new alias of the main collection, then reads through it."""
    if len(w.aliases) >= MAX_ALIASES:
        return drop_alias(w)
    alias = w.alias_name()
    w.aliases.append(alias)
    return [
        w.step("create alias", "create_alias", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=w.spec.name, alias=alias),
        w.step("describe alias", "describe_alias", shape=Shape.VALUE, read=True,
               expect={"alias": alias, "collection_name": w.spec.name}, alias=alias),
        list_aliases_step(w),
        w.step("count via alias", "query", shape=Shape.COUNT, read=True, expect=len(w.model.rows),
               **strong(collection_name=alias, filter="", output_fields=["count(*)"])),
    ]  # fmt: skip


def drop_alias(w: Workload) -> list[Step]:
    if not w.aliases:
        return create_alias(w)
    alias = w.rng.choice(w.aliases)
    return [
        drop_alias_step(w, alias),
        w.step("describe dropped alias", "describe_alias", shape=Shape.VALUE, read=True, expect=Expect.RAISES,
               alias=alias),
        w.step("query dropped alias", "query", shape=Shape.ROWS, read=True, expect=Expect.RAISES,
               **strong(collection_name=alias, filter="id >= 0")),
        list_aliases_step(w),
    ]  # fmt: skip


def alter_alias(w: Workload) -> list[Step]:
    """Move an alias to a new, empty collection, read through it, move it back, drop that collection."""
    if not w.aliases:
        return create_alias(w)
    alias = w.rng.choice(w.aliases)
    other = w.temp_name()
    w.created.add(other)
    return [
        w.step("create temp", "create_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=other, dimension=DIM, consistency_level=STRONG),
        w.step("alter alias", "alter_alias", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=other, alias=alias),
        w.step("count via moved alias", "query", shape=Shape.COUNT, read=True, expect=0,
               **strong(collection_name=alias, filter="", output_fields=["count(*)"])),
        w.step("drop temp with an alias", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.RAISES,
               features=_LITE_DROPS, collection_name=other),
        w.step("alter alias back", "alter_alias", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=w.spec.name, alias=alias),
        w.step("count via alias", "query", shape=Shape.COUNT, read=True, expect=len(w.model.rows),
               **strong(collection_name=alias, filter="", output_fields=["count(*)"])),
        w.step("drop temp", "drop_collection", shape=Shape.ACK, read=False, expect=Expect.ANSWERS,
               collection_name=other),
    ]  # fmt: skip


def invalid_alias_op(w: Workload) -> list[Step]:
    """An alias call both servers must refuse; nothing changes."""
    rng = w.rng
    missing = f"{w.prefix}al{w.aliases_made + 100}"
    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("alias named as a collection", "create_alias", {"collection_name": w.spec.name, "alias": w.spec.name}),
        ("alias of a missing collection", "create_alias",
         {"collection_name": f"{w.prefix}never", "alias": missing}),
        ("alter a missing alias", "alter_alias", {"collection_name": w.spec.name, "alias": missing}),
        ("describe a missing alias", "describe_alias", {"alias": missing}),
    ]  # fmt: skip
    if w.aliases:
        cases += [
            ("drop the collection via an alias", "drop_collection", {"collection_name": rng.choice(w.aliases)}),
            ("drop a collection with aliases", "drop_collection", {"collection_name": w.spec.name}),
        ]
    label, method, kwargs = rng.choice(cases)
    features = _LITE_DROPS if method == "drop_collection" else frozenset()
    return [w.step(f"invalid alias op ({label})", method, shape=Shape.ACK, read=False, expect=Expect.RAISES,
                   features=features, **kwargs)]  # fmt: skip


def list_partitions_step(w: Workload) -> Step:
    return w.step("list partitions", "list_partitions", shape=Shape.NAMES, read=True,
                  expect=NamesExpectation(prefix="", names=tuple(sorted(w.partitions))),
                  collection_name=w.spec.name)  # fmt: skip


def list_partitions(w: Workload) -> list[Step]:
    return [list_partitions_step(w)]


def has_partition(w: Workload) -> list[Step]:
    partition = w.rng.choice([*w.partitions, f"p{w.partitions_made + 1}", "p0"])
    return [w.step("has partition", "has_partition", shape=Shape.VALUE, read=True,
                   expect=partition in w.partitions, collection_name=w.spec.name, partition_name=partition)]  # fmt: skip


def list_aliases(w: Workload) -> list[Step]:
    return [list_aliases_step(w)]
