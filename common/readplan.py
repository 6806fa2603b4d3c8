"""The read plan: what one search or query reads, built once by the proxy.

A ``ReadPlan`` (and, for a search, its ``VectorQuery``) travels unchanged from the proxy through the delegators to the
workers; the delegator adds only its read timestamp, passed beside it. Its
filter is parsed and bound to the collection's schema once, by the proxy
(``ReadFilter``): every level evaluates that tree. In one process (standalone)
the plan is handed on as this object; at a gRPC edge it is encoded and decoded
in one place (``common/readplan_pb.py``), the bound filter with it
(``common/expr/wire.py``), so no query node parses the text again.

The proxy binds with its schema, which is at least as new as the guarantee
timestamp's (``proxy/consistency.py`` ``schema_guarantee``); the delegators wait
for that timestamp before they read, so every segment read has the fields the
filter names.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from common.errors import PartitionNotLoaded
from common.expr import Expr
from common.expr.asyncparse import filter_size, parse_filter_async
from common.expr.parser import parse_filter
from common.schema import CollectionSchema

DEFAULT_READ_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadFilter:
    """A read's filter, bound once: the text (for messages), the tree, and its parsing cost."""

    text: str
    expr: Expr
    cost: int  # filter characters plus list-parameter elements (``filter_size``): sizes the work split

    @staticmethod
    def parse(text: str, schema: CollectionSchema, params: Mapping[str, Any] | None = None) -> ReadFilter | None:
        """``text`` bound to ``schema`` (None for a blank filter). Raises ``IllegalFilter``."""
        if not text.strip():
            return None
        return ReadFilter(text=text, expr=parse_filter(text, schema, params or None), cost=filter_size(text, params))

    @staticmethod
    async def parse_async(
        text: str, schema: CollectionSchema, params: Mapping[str, Any] | None = None
    ) -> ReadFilter | None:
        """``parse``, in a worker thread when the filter is long (``common/expr/asyncparse.py``)."""
        if not text.strip():
            return None
        expr = await parse_filter_async(text, schema, params or None)
        return ReadFilter(text=text, expr=expr, cost=filter_size(text, params))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadPlan:
    """What a search or query reads; the search's vectors and top-k and a query's limit go beside it."""

    guarantee_ts: int  # read once the delegator's tsafe reaches it
    filter: ReadFilter | None = None  # None: every row
    output_fields: tuple[str, ...] = ()
    timeout: float = DEFAULT_READ_TIMEOUT  # seconds the delegators wait for tsafe and their workers
    partitions: tuple[int, ...] | None = None  # None: every (loaded) partition
    expire_before: int = 0  # rows written before it have expired (the collection's TTL; 0: none)
    ignore_growing: bool = False  # sealed segments only: growing data is left out (Milvus's ignore_growing)
    # The proxy's names of ``partitions``, for its errors; not sent on.
    partition_names: Mapping[int, str] = field(default_factory=dict, compare=False)

    @property
    def expr(self) -> Expr | None:
        return None if self.filter is None else self.filter.expr

    @property
    def filter_cost(self) -> int:
        return 0 if self.filter is None else self.filter.cost

    def within(self, loaded: Collection[int]) -> ReadPlan:
        """This plan restricted to the ``loaded`` partitions (the coordinator's list).

        Naming a partition that is not loaded is an error; naming none reads every loaded one
        (a dropped partition is never among them, so its rows are never read).
        """
        if self.partitions is not None:
            missing = [p for p in self.partitions if p not in loaded]
            if missing:
                name = self.partition_names.get(missing[0], str(missing[0]))
                raise PartitionNotLoaded(f"partition not loaded[partition={name}]")
            return self
        return replace(self, partitions=tuple(loaded) or None)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class VectorQuery:
    """What a search looks for, beside its ``ReadPlan``: the same at every level."""

    anns_field: str
    metric: str
    vectors: np.ndarray  # the query matrix: float32 rows, uint8 codes (binary), or a padded batch of pairs (sparse)
    topk: int  # hits per query each level returns (the proxy's offset included)
    params: Mapping[str, Any] = field(default_factory=dict)  # the index's search params (ef, nprobe, ...)
