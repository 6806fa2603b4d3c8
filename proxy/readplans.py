"""The proxy builds each read's ``ReadPlan`` (``common/readplan.py``) here, once per request.

The filter is parsed and bound to the collection's schema here, which also
rejects a bad one before anything is read; every query node evaluates this
bound tree (in-process as it is, over gRPC decoded from its wire form).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from common.readplan import DEFAULT_READ_TIMEOUT, ReadFilter, ReadPlan
from common.schema import CollectionSchema
from common.tracing import traced


@traced("proxy.plan")
async def plan_read(
    schema: CollectionSchema,
    *,
    guarantee_ts: int,
    filter: str = "",
    filter_params: Mapping[str, Any] | None = None,
    output_fields: Sequence[str] = (),
    partitions: Sequence[int] | None = None,
    partition_names: Mapping[int, str] | None = None,
    ignore_growing: bool = False,
    timeout: float = DEFAULT_READ_TIMEOUT,
) -> ReadPlan:
    """A read of ``schema``'s collection; raises ``IllegalFilter`` for a bad ``filter``.

    ``partitions``: the ids named (None: every loaded one), ``partition_names`` their names."""
    return ReadPlan(
        guarantee_ts=guarantee_ts,
        filter=await ReadFilter.parse_async(filter, schema, filter_params),
        output_fields=tuple(output_fields),
        timeout=timeout,
        partitions=None if partitions is None else tuple(partitions),
        partition_names=dict(partition_names or {}),
        ignore_growing=ignore_growing,
    )


async def refiltered(
    plan: ReadPlan,
    schema: CollectionSchema,
    *,
    filter: str,
    filter_params: Mapping[str, Any] | None = None,
    output_fields: Sequence[str],
    **changes: Any,
) -> ReadPlan:
    """``plan`` (its timestamp, partitions, timeout) with another filter and output fields: a
    hybrid search's sub search, a lookup of primary keys."""
    bound = await ReadFilter.parse_async(filter, schema, filter_params)
    return replace(plan, filter=bound, output_fields=tuple(output_fields), **changes)
