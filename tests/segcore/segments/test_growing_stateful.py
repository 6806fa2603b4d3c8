"""Hypothesis state machine: a GrowingStore against a naive MVCC model.

Random inserts, deletes, upserts (delete + insert at one timestamp, either
order), late deletes and reads at past timestamps. The model keeps every
operation in a list and answers "what is visible at T" by brute force.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from common.schema import TIMESTAMP_COLUMN, CollectionSchema, DataType, FieldSchema
from segcore.segments import GrowingStore

DIM = 4
KEYS = st.lists(st.integers(0, 12), min_size=1, max_size=6)
STEP = st.integers(0, 3)


def vector_of(seq: int) -> np.ndarray:
    return np.random.default_rng(seq).standard_normal(DIM).astype(np.float32)


class GrowingStoreMachine(RuleBasedStateMachine):
    pk_type = DataType.INT64

    @initialize()
    def setup(self) -> None:
        self.schema = CollectionSchema(
            name="c",
            fields=(
                FieldSchema(field_id=100, name="pk", dtype=self.pk_type, is_primary=True),
                FieldSchema(field_id=101, name="vec", dtype=DataType.FLOAT_VECTOR, dim=DIM),
                FieldSchema(field_id=102, name="seq", dtype=DataType.INT64),
            ),
        )
        self.store = GrowingStore(self.schema)
        self.now = 1
        self.next_seq = 0
        self.inserts: list[tuple[Any, int, int]] = []  # (key, ts, seq) in arrival order
        self.deletes: list[tuple[Any, int]] = []  # (key, ts)

    # -- operations ------------------------------------------------------------

    def key(self, k: int) -> Any:
        return f"k{k}" if self.pk_type == DataType.VARCHAR else k

    def insert_at(self, ks: list[int], ts: int) -> None:
        keys = [self.key(k) for k in ks]
        seqs = list(range(self.next_seq, self.next_seq + len(keys)))
        self.next_seq += len(keys)
        vectors = np.stack([vector_of(s) for s in seqs])
        batch = pa.table(
            {
                "pk": pa.array(keys, self.schema.field("pk").arrow_type()),
                "vec": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                "seq": pa.array(seqs, pa.int64()),
                TIMESTAMP_COLUMN: pa.array([ts] * len(keys), pa.uint64()),
            }
        )
        self.store.apply_insert(batch)
        self.inserts.extend((k, ts, s) for k, s in zip(keys, seqs, strict=True))

    def delete_at(self, ks: list[int], ts: int) -> None:
        keys = [self.key(k) for k in ks]
        self.store.apply_delete(pa.array(keys, self.schema.field("pk").arrow_type()), ts)
        self.deletes.extend((k, ts) for k in keys)

    @rule(ks=KEYS, step=STEP)
    def insert(self, ks: list[int], step: int) -> None:
        self.now += step
        self.insert_at(ks, self.now)

    @rule(ks=KEYS, step=STEP)
    def delete(self, ks: list[int], step: int) -> None:
        self.now += step
        self.delete_at(ks, self.now)

    @rule(ks=KEYS, step=STEP, delete_first=st.booleans())
    def upsert(self, ks: list[int], step: int, delete_first: bool) -> None:
        self.now += step
        if delete_first:
            self.delete_at(ks, self.now)
            self.insert_at(ks, self.now)
        else:
            self.insert_at(ks, self.now)
            self.delete_at(ks, self.now)

    @rule(ks=KEYS, back=st.integers(0, 6))
    def late_delete(self, ks: list[int], back: int) -> None:
        self.delete_at(ks, max(0, self.now - back))

    @rule(ks=KEYS)
    def refused_late_insert(self, ks: list[int]) -> None:
        if self.store.high_water_ts == 0:
            return
        rows = self.store.num_rows
        try:
            self.insert_at(ks, self.store.high_water_ts - 1)
        except ValueError:
            pass
        else:
            raise AssertionError("an insert below the high-water timestamp was accepted")
        assert self.store.num_rows == rows

    # -- model -----------------------------------------------------------------

    def model(self, read_ts: int) -> dict[Any, tuple[int, int]]:
        """key -> (ts, seq) of the row visible at ``read_ts``."""
        newest: dict[Any, tuple[int, int]] = {}
        for key, ts, seq in self.inserts:
            if ts <= read_ts and (key not in newest or ts >= newest[key][0]):
                newest[key] = (ts, seq)
        return {
            key: (ts, seq)
            for key, (ts, seq) in newest.items()
            if not any(k == key and ts < dts <= read_ts for k, dts in self.deletes)
        }

    def live_rows(self, read_ts: int) -> int:
        """Rows ``count(*)`` counts at ``read_ts``: every row of a visible key's newest timestamp."""
        visible = self.model(read_ts)
        return sum(1 for key, ts, _ in self.inserts if key in visible and visible[key][0] == ts)

    # -- checks ----------------------------------------------------------------

    def check_rows(self, read_ts: int) -> None:
        expected = self.model(read_ts)
        got = self.store.query(read_ts=read_ts, output_fields=["seq"])
        assert got["pk"].to_pylist() == sorted(expected)
        assert got["seq"].to_pylist() == [expected[k][1] for k in sorted(expected)]
        assert self.store.count(read_ts=read_ts) == self.live_rows(read_ts)

    @rule(back=st.integers(0, 12))
    def read_in_the_past(self, back: int) -> None:
        self.check_rows(max(0, self.now - back))

    @invariant()
    def rows_visible_now_match_the_model(self) -> None:
        if hasattr(self, "store"):
            self.check_rows(self.now)
            assert self.store.num_rows == len(self.inserts)

    @invariant()
    def search_matches_brute_force_over_visible_rows(self) -> None:
        if not hasattr(self, "store"):
            return
        visible = self.model(self.now)
        query = vector_of(10**6 + self.next_seq)
        result = self.store.search(
            field="vec",
            vectors=query,
            metric="L2",
            topk=4,
            read_ts=self.now,
            output_fields=["seq"],
        )
        reference = {
            key: float(((vector_of(seq) - query).astype(np.float64) ** 2).sum())
            for key, (_, seq) in visible.items()
        }
        best = sorted(reference.values())[:4]
        np.testing.assert_allclose(result["distance"].to_pylist(), best, rtol=1e-4, atol=1e-5)
        for key, seq, dist in zip(
            result["pk"].to_pylist(),
            result["seq"].to_pylist(),
            result["distance"].to_pylist(),
            strict=True,
        ):
            assert visible[key][1] == seq
            assert abs(reference[key] - dist) <= 1e-4 * max(1.0, dist)


class VarcharGrowingStoreMachine(GrowingStoreMachine):
    pk_type = DataType.VARCHAR


_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestGrowingStoreInt64 = GrowingStoreMachine.TestCase
TestGrowingStoreInt64.settings = _SETTINGS
TestGrowingStoreVarchar = VarcharGrowingStoreMachine.TestCase
TestGrowingStoreVarchar.settings = _SETTINGS
