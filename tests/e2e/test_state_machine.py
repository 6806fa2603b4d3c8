"""A Hypothesis state machine: what Strata returns equals a model of the collection.

Each run makes a collection on the session's standalone and applies a random
sequence of insert and upsert (into ``_default`` or ``p1``), delete (by ids,
in every partition or in one, and by filter), flush, and release + load,
keeping a model: per partition, primary key -> version of its row there. As in
Milvus, a key may have a row in each partition (an insert or upsert into one
partition leaves the key's row in the other), and a delete naming a partition
removes the row there only. A row's vector and its ``ver`` field are derived
from its version, so an old version that comes back is caught, not only a
deleted key. After every step the machine checks, with Strong consistency:

* ``query`` returns each key of the model once, with its newest version;
* ``count(*)`` counts every row of the model (a key with a row in each
  partition twice), and a query of partition ``p1`` returns exactly its rows;
* a FLAT search (exact) for a random live row's vector returns the model's
  exact top k keys (a key at the distance of its nearer row), so neither a
  deleted row nor an overwritten version is ever a hit.

Keys are drawn from a small pool, so deletes and upserts hit rows in every
state: growing, sealed in a flushed segment, reloaded from storage.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from pymilvus import DataType, MilvusClient

from tests.e2e.util import unique_name
from tests.harness import Standalone

DIM = 8
POOL = 60
STRONG = "Strong"

keys = st.lists(st.integers(0, POOL - 1), min_size=1, max_size=20, unique=True)
partitions = st.sampled_from(["_default", "p1"])


def _vector(version: int) -> list[float]:
    return np.random.default_rng(version).standard_normal(DIM).astype(np.float32).tolist()


class CollectionMachine(RuleBasedStateMachine):
    client: MilvusClient

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[int, int]] = {"_default": {}, "p1": {}}  # partition -> pk -> version
        self.versions = 0
        self.name = unique_name("machine")
        self.loaded = True

    @initialize(shards=st.sampled_from([1, 2]))
    def create(self, shards: int) -> None:
        schema = MilvusClient.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("ver", DataType.INT64)
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM)
        params = self.client.prepare_index_params()
        params.add_index("v", index_type="FLAT", metric_type="L2")
        self.client.create_collection(self.name, schema=schema, index_params=params, num_shards=shards)
        self.client.create_partition(self.name, "p1")

    def _rows(self, pks: list[int]) -> list[dict[str, object]]:
        rows = []
        for pk in pks:
            self.versions += 1
            rows.append({"id": pk, "ver": self.versions, "v": _vector(self.versions)})
        return rows

    @property
    def model(self) -> dict[int, int]:
        """pk -> version of its newest row (in either partition)."""
        out: dict[int, int] = {}
        for rows in self.rows.values():
            for pk, ver in rows.items():
                out[pk] = max(ver, out.get(pk, 0))
        return out

    @rule(pks=keys, partition=partitions)
    def insert(self, pks: list[int], partition: str) -> None:
        fresh = [pk for pk in pks if pk not in self.rows[partition]]  # a key live there would have two rows
        if not fresh:
            return
        rows = self._rows(fresh)
        self.client.insert(self.name, rows, partition_name=partition)
        self.rows[partition].update({r["id"]: r["ver"] for r in rows})  # type: ignore[misc]

    @rule(pks=keys, partition=partitions)
    def upsert(self, pks: list[int], partition: str) -> None:
        rows = self._rows(pks)
        self.client.upsert(self.name, rows, partition_name=partition)
        self.rows[partition].update({r["id"]: r["ver"] for r in rows})  # type: ignore[misc]

    @rule(pks=keys)
    def delete_ids(self, pks: list[int]) -> None:
        self.client.delete(self.name, ids=pks)
        for rows in self.rows.values():
            for pk in pks:
                rows.pop(pk, None)

    @rule(pks=keys, partition=partitions)
    def delete_ids_in_partition(self, pks: list[int], partition: str) -> None:
        self.client.delete(self.name, ids=pks, partition_name=partition)
        for pk in pks:
            self.rows[partition].pop(pk, None)

    @precondition(lambda self: self.loaded)  # as in Milvus, a delete by a non-PK filter reads: it needs a load
    @rule(low=st.integers(0, POOL - 1), width=st.integers(1, 15))
    def delete_filter(self, low: int, width: int) -> None:
        self.client.delete(self.name, filter=f"id >= {low} and id < {low + width}")
        for rows in self.rows.values():
            for pk in range(low, low + width):
                rows.pop(pk, None)

    @rule()
    def flush(self) -> None:
        self.client.flush(self.name)

    @precondition(lambda self: self.loaded)
    @rule()
    def release(self) -> None:
        self.client.release_collection(self.name)
        self.loaded = False

    @precondition(lambda self: not self.loaded)
    @rule()
    def load(self) -> None:
        self.client.load_collection(self.name)
        self.loaded = True

    @precondition(lambda self: self.loaded)
    @invariant()
    def query_equals_the_model(self) -> None:
        rows = self.client.query(
            self.name, filter="id >= 0", output_fields=["ver"], limit=POOL * 2, consistency_level=STRONG
        )
        got = {r["id"]: r["ver"] for r in rows}
        assert len(rows) == len(got), "a key returned twice"
        assert got == self.model
        count = self.client.query(self.name, filter="", output_fields=["count(*)"], consistency_level=STRONG)
        assert count[0]["count(*)"] == sum(len(rows) for rows in self.rows.values())
        in_p1 = self.client.query(
            self.name,
            filter="id >= 0",
            output_fields=["ver"],
            limit=POOL * 2,
            partition_names=["p1"],
            consistency_level=STRONG,
        )
        assert {r["id"]: r["ver"] for r in in_p1} == self.rows["p1"]

    @precondition(lambda self: self.loaded and bool(self.model))
    @invariant()
    def exact_search_equals_the_model(self) -> None:
        pks = sorted(self.model)
        probe = np.asarray(_vector(self.model[pks[len(pks) // 2]]), dtype=np.float32)
        k = min(10, len(pks))
        nearest: dict[int, tuple[float, int]] = {}  # pk -> (distance, version) of its nearer row
        for rows in self.rows.values():
            for pk, ver in rows.items():
                d = float(((np.asarray(_vector(ver), dtype=np.float32) - probe) ** 2).sum())
                nearest[pk] = min((d, ver), nearest.get(pk, (np.inf, 0)))
        want = sorted((d, pk, ver) for pk, (d, ver) in nearest.items())[:k]
        hits = self.client.search(
            self.name, data=[probe.tolist()], limit=k, output_fields=["ver"], consistency_level=STRONG
        )[0]
        assert [h["id"] for h in hits] == [pk for _, pk, _ in want]
        assert [h["entity"]["ver"] for h in hits] == [ver for _, _, ver in want]
        assert np.allclose([h["distance"] for h in hits], [d for d, _, _ in want], atol=1e-4)

    def teardown(self) -> None:
        self.client.drop_collection(self.name)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_collection_matches_its_model(standalone: Standalone) -> None:
    client = MilvusClient(standalone.uri, timeout=60)
    CollectionMachine.client = client
    try:
        run_state_machine_as_test(
            CollectionMachine,
            settings=settings(
                max_examples=8,
                stateful_step_count=25,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
                derandomize=True,
            ),
        )
    finally:
        client.close()
