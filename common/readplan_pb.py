"""``ReadPlan`` <-> protobuf ``ReadOptions``: the one encode and the one decode of a read plan.

Called only where a read crosses gRPC: the proxy calling a query node over the
network, a delegator calling another node's worker, and the query node's
servicer receiving either. In one process the plan is passed as it is.
"""

from __future__ import annotations

from common.expr.wire import decode_expr, encode_expr
from common.readplan import DEFAULT_READ_TIMEOUT, ReadFilter, ReadPlan
from protos import querynode_pb2 as pb


def encode_read_plan(plan: ReadPlan) -> pb.ReadOptions:
    f = plan.filter
    return pb.ReadOptions(
        guarantee_timestamp=plan.guarantee_ts,
        filter="" if f is None else f.text,
        filter_expr=b"" if f is None else encode_expr(f.expr),
        filter_cost=0 if f is None else f.cost,
        output_fields=list(plan.output_fields),
        timeout_ms=int(plan.timeout * 1000),
        partition_ids=list(plan.partitions or ()),
        expire_before=plan.expire_before,
        ignore_growing=plan.ignore_growing,
    )


def decode_read_plan(msg: pb.ReadOptions) -> ReadPlan:
    """The plan ``encode_read_plan`` sent; raises ``InvalidArgument`` for a malformed filter."""
    f = None
    if msg.filter_expr:
        f = ReadFilter(text=msg.filter, expr=decode_expr(msg.filter_expr), cost=int(msg.filter_cost))
    return ReadPlan(
        guarantee_ts=msg.guarantee_timestamp,
        filter=f,
        output_fields=tuple(msg.output_fields),
        timeout=msg.timeout_ms / 1000 if msg.timeout_ms else DEFAULT_READ_TIMEOUT,
        partitions=tuple(msg.partition_ids) or None,
        expire_before=msg.expire_before,
        ignore_growing=msg.ignore_growing,
    )
