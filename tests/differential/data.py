"""The collection the differential workload uses: its schema and random rows.

Values are drawn from small pools so that filters hit rows: integers in
[-6, 6] (now and then a large one), doubles on a 0.25 grid, words that share
prefixes, suffixes and the LIKE metacharacters, JSON documents whose keys are
sometimes absent, JSON ``null``, or of another type, INT64 arrays of 0 to 4
small values (repeats allowed), sparse vectors of 1 to 5 positive weights
over 24 shared dimensions (now and then one far out). About one new row in ten
copies the vectors of an existing row, so searches meet exact ties.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pymilvus import CollectionSchema, DataType, MilvusClient
from pymilvus.milvus_client.index import IndexParams

DIM = 8
MAX_LENGTH = 32
MAX_CAPACITY = 4  # of the ARRAY field ``arr``
FIELDS = ("id", "i", "d", "s", "b", "meta", "arr", "v", "sp")
NULLABLE_CANDIDATES = ("d", "s", "meta", "arr", "v")
VECTOR_FIELDS = ("v", "sp")
SPARSE_DIMS = 24  # the dimensions most sparse weights fall on, so that rows and queries overlap
FAR_DIMS = (1_000, 2**20, 2**32 - 2)  # far out, up to the largest index Milvus allows
WORDS = (
    "apple",
    "apricot",
    "banana",
    "band",
    "bandana",
    "cherry",
    "",
    "a_b",
    "a%b",
    "axb",
    "Zed",
    "zeta",
    "naïve",
    "nave",
)
SMALL_INTS = tuple(range(-6, 7))
BIG_INTS = (-(2**40), 10**12, 2**53 + 1)
JSON_INTS = tuple(range(5))

Row = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionSpec:
    """One collection of the workload: int64 ``id``, scalars, JSON ``meta``, an INT64 ARRAY ``arr``, a FLAT-indexed
    8-d vector ``v`` (nullable or not) and a sparse vector ``sp`` (SPARSE_INVERTED_INDEX, IP)."""

    name: str
    metric: Literal["L2", "IP"]
    nullable: frozenset[str]

    def validate(self) -> None:
        if not self.nullable <= set(NULLABLE_CANDIDATES):
            raise ValueError(f"only {NULLABLE_CANDIDATES} may be nullable, not {sorted(self.nullable)}")
        if self.metric not in ("L2", "IP"):
            raise ValueError(f"metric must be L2 or IP, not {self.metric}")

    def schema(self) -> CollectionSchema:
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("i", DataType.INT64)
        schema.add_field("d", DataType.DOUBLE, nullable="d" in self.nullable)
        schema.add_field("s", DataType.VARCHAR, max_length=MAX_LENGTH, nullable="s" in self.nullable)
        schema.add_field("b", DataType.BOOL)
        schema.add_field("meta", DataType.JSON, nullable="meta" in self.nullable)
        schema.add_field("arr", DataType.ARRAY, element_type=DataType.INT64, max_capacity=MAX_CAPACITY,
                         nullable="arr" in self.nullable)  # fmt: skip
        schema.add_field("v", DataType.FLOAT_VECTOR, dim=DIM, nullable="v" in self.nullable)
        schema.add_field("sp", DataType.SPARSE_FLOAT_VECTOR)
        return schema

    def index_params(self) -> IndexParams:
        params = MilvusClient.prepare_index_params()
        params.add_index("v", index_type="FLAT", metric_type=self.metric)
        params.add_index("sp", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        return params

    def metric_of(self, field: str) -> Literal["L2", "IP"]:
        """The metric a search on vector ``field`` uses (a sparse field's is always IP)."""
        return self.metric if field == "v" else "IP"


class RowMaker:
    """Random rows for one collection; deterministic for a given ``random.Random``."""

    def __init__(self, rng: random.Random, spec: CollectionSpec) -> None:
        self._rng = rng
        self._spec = spec

    def row(self, pk: int, vector_of: Row | None = None) -> dict[str, Any]:
        """A full row (nulls as ``None``); ``vector_of`` gives its vectors to the new row."""
        rng = self._rng
        nullable = self._spec.nullable
        return {
            "id": pk,
            "i": rng.choice(BIG_INTS) if rng.random() < 0.05 else rng.choice(SMALL_INTS),
            "d": None if "d" in nullable and rng.random() < 0.2 else self._double(),
            "s": None if "s" in nullable and rng.random() < 0.15 else rng.choice(WORDS),
            "b": rng.random() < 0.5,
            "meta": None if "meta" in nullable and rng.random() < 0.15 else self._document(),
            "arr": None if "arr" in nullable and rng.random() < 0.15 else self.array(),
            "v": self._copied(vector_of["v"]) if vector_of is not None else self._maybe_null_vector(),
            "sp": dict(vector_of["sp"]) if vector_of is not None else self.sparse(),
        }

    def _maybe_null_vector(self) -> list[float] | None:
        return None if "v" in self._spec.nullable and self._rng.random() < 0.12 else self.vector()

    @staticmethod
    def _copied(vector: list[float] | None) -> list[float] | None:
        return None if vector is None else list(vector)

    def payload(self, row: Row) -> dict[str, Any]:
        """What is sent for ``row``: a null of a nullable field is sometimes left out instead of sent as None."""
        return {
            k: v for k, v in row.items() if not (v is None and k in self._spec.nullable and self._rng.random() < 0.5)
        }

    def array(self) -> list[int]:
        return self._rng.choices(JSON_INTS, k=self._rng.randint(0, MAX_CAPACITY))

    def vector(self) -> list[float]:
        """A random vector, already rounded to float32 so the model holds what the servers store."""
        values = np.asarray([self._rng.gauss(0.0, 1.0) for _ in range(DIM)], dtype=np.float32)
        return [float(x) for x in values]

    def sparse(self, *, distinct: bool = False) -> dict[int, float]:
        """A sparse vector of 1-5 positive float32 weights (``distinct``: no two equal, so the share
        ``drop_ratio_search`` drops is well defined). Never empty and never a zero weight: milvus-lite refuses
        both (D25)."""
        rng = self._rng
        dims = rng.sample(range(SPARSE_DIMS), rng.randint(1, 5))
        if rng.random() < 0.1:
            dims.append(rng.choice(FAR_DIMS))
        while True:
            weights = [rng.randint(1, 8) / 4 if rng.random() < 0.3 else rng.uniform(0.05, 2.0) for _ in dims]
            values = [float(x) for x in np.asarray(weights, dtype=np.float32)]
            if not distinct or len(set(values)) == len(values):
                return dict(zip(dims, values, strict=True))

    def _double(self) -> float:
        if self._rng.random() < 0.2:
            return self._rng.uniform(-3.0, 3.0)
        return self._rng.randint(-12, 12) / 4

    def _document(self) -> dict[str, Any]:
        rng = self._rng
        doc: dict[str, Any] = {}
        r = rng.random()
        if r < 0.7:
            doc["a"] = rng.choice(JSON_INTS)
        elif r < 0.75:
            doc["a"] = None
        elif r < 0.8:
            doc["a"] = rng.choice(("1", "x"))
        elif r < 0.85:
            doc["a"] = rng.choice((1.5, 2.5))
        if rng.random() < 0.8:
            doc["tags"] = rng.sample(JSON_INTS, rng.randint(0, 3))
        if rng.random() < 0.7:
            doc["name"] = rng.choice(WORDS)
        if rng.random() < 0.7:
            doc["flag"] = rng.random() < 0.5
        if rng.random() < 0.5:
            doc["n"] = {"x": rng.choice(JSON_INTS)}
        return doc
