"""Which segments to compact, decided without I/O (STYLE rule 13): segment metadata in, plans out.

**L0 plans** fold a vchannel's L0 deletes into its L1 segments. Dropping an
L0 segment is safe only if every row its deletes can remove is in a segment
that receives them: a delete at ``T`` removes rows written before ``T``, so
every L1 segment that is not FLUSHED yet (and every import still running)
must have started at or after the L0 segment's last delete. L0 segments that
pass (``l0_plan``) go, with every visible FLUSHED L1 segment of the vchannel
as a target, automatically once ``l0_segments`` settled ones have piled up, or
on a manual request.

**Mix plans** merge segments of one vchannel and partition (``mix_plans``):
automatically, settled segments (flushed ``min_age`` seconds ago) that have
``delete_ratio`` of their rows deleted, that hold only expired rows (TTL), or,
once ``min_segments`` of them are small (under half the target), the small
ones; on a manual request, every segment with deletes or possibly expired rows
and every small one when there are two. A vchannel whose L0 deletes cannot be
folded yet is rewritten whole on a manual request (the deletes are read from
the L0 segments directly). Plans hold at most ``max_inputs`` segments, so a
commit (the plan record plus one write per input) fits one etcd transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from common.segment import SegmentLevel, SegmentMeta, SegmentState


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyOptions:
    target_rows: int
    min_segments: int = 4
    delete_ratio: float = 0.2
    l0_segments: int = 16
    min_age_seconds: float = 600.0
    max_inputs: int = 64
    max_l0: int = 90


@dataclass(frozen=True, slots=True, kw_only=True)
class MixChoice:
    vchannel: str
    partition_id: int
    inputs: tuple[SegmentMeta, ...]
    reason: str
    # L0 segments this plan makes unneeded: its inputs are every L1 segment their deletes can touch.
    drop_l0: tuple[SegmentMeta, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class L0Choice:
    vchannel: str
    l0: tuple[SegmentMeta, ...]
    targets: tuple[SegmentMeta, ...]


def _max_ts(seg: SegmentMeta) -> int | None:
    return None if seg.position is None else seg.position.timetick


def foldable_l0(
    live: Sequence[SegmentMeta], flushed: Sequence[SegmentMeta], *, import_floor: int | None
) -> list[SegmentMeta]:
    """The FLUSHED L0 segments of one vchannel whose deletes can be folded into its flushed segments now.

    ``live`` is every live segment of the vchannel, ``flushed`` its visible FLUSHED ones,
    ``import_floor`` the smallest timestamp of an import still running on the collection.
    """
    bound = import_floor
    for seg in live:
        if seg.level != SegmentLevel.L1 or seg.state == SegmentState.FLUSHED:
            continue
        if seg.start_position is None:
            return []  # a segment growing from an unknown point: nothing is safe
        start = seg.start_position.timetick
        bound = start if bound is None else min(bound, start)
    out = []
    for seg in flushed:
        if seg.level != SegmentLevel.L0:
            continue
        last = _max_ts(seg)
        if last is None:
            continue
        if bound is None or last <= bound:
            out.append(seg)
    return out


def l0_plan(
    live: Sequence[SegmentMeta],
    flushed: Sequence[SegmentMeta],
    options: PolicyOptions,
    *,
    import_floor: int | None,
    manual: bool,
    now: float = 0.0,
) -> L0Choice | None:
    """The L0 plan of one vchannel, or None (nothing foldable, or not enough of it yet).

    Automatically only settled L0 segments (flushed ``min_age_seconds`` ago) count and go.
    """
    l0 = foldable_l0(live, flushed, import_floor=import_floor)
    if not manual:
        l0 = [s for s in l0 if s.flushed_at + options.min_age_seconds <= now]
    if not l0 or (not manual and len(l0) < options.l0_segments):
        return None
    targets = tuple(s for s in flushed if s.level == SegmentLevel.L1)
    return L0Choice(vchannel=l0[0].vchannel, l0=tuple(l0[: options.max_l0]), targets=targets)


def folds_in_mix(flushed: Sequence[SegmentMeta], options: PolicyOptions) -> bool:
    """A manual request can fold the vchannel's L0 deletes in its mix plan rather than an L0 plan first:
    every L1 segment is in one partition, so one plan rewrites all of them."""
    l1 = [s for s in flushed if s.level == SegmentLevel.L1]
    return bool(l1) and len({s.partition_id for s in l1}) == 1 and len(l1) <= options.max_inputs


def with_l0_folded(
    plans: list[MixChoice], live: Sequence[SegmentMeta], flushed: Sequence[SegmentMeta], *, import_floor: int | None
) -> list[MixChoice]:
    """``plans`` with the foldable L0 segments attached when one plan rewrites every L1 segment of the vchannel."""
    l1 = {s.segment_id for s in flushed if s.level == SegmentLevel.L1}
    if len(plans) != 1 or {s.segment_id for s in plans[0].inputs} != l1:
        return plans
    l0 = foldable_l0(live, flushed, import_floor=import_floor)
    if not l0:
        return plans
    only = plans[0]
    return [
        MixChoice(
            vchannel=only.vchannel,
            partition_id=only.partition_id,
            inputs=only.inputs,
            reason=only.reason,
            drop_l0=tuple(l0[: max(0, 98 - len(only.inputs))]),
        )
    ]


def mix_plans(
    flushed: Sequence[SegmentMeta],
    options: PolicyOptions,
    *,
    now: float,
    expire_before: int,
    manual: bool,
    unfolded_deletes: bool = False,
) -> list[MixChoice]:
    """Mix plans for one vchannel's visible FLUSHED segments (any partition), at most ``max_inputs`` each.

    ``expire_before`` is the TTL bound (0: no TTL); ``unfolded_deletes`` says L0 deletes of the
    vchannel could not be folded (a manual request then rewrites every segment of the vchannel).
    """
    by_partition: dict[int, list[SegmentMeta]] = {}
    for seg in flushed:
        if seg.level == SegmentLevel.L1:
            by_partition.setdefault(seg.partition_id, []).append(seg)
    plans = []
    small_limit = max(1, options.target_rows // 2)
    for partition_id, segs in sorted(by_partition.items()):
        if not manual:
            segs = [s for s in segs if s.flushed_at + options.min_age_seconds <= now]
        chosen: dict[int, SegmentMeta] = {}
        reasons = set()
        for s in segs:
            if s.rows and s.deleted_rows >= options.delete_ratio * s.rows or (manual and s.deleted_rows):
                chosen[s.segment_id] = s
                reasons.add("deletes")
            last = _max_ts(s)
            first = None if s.start_position is None else s.start_position.timetick
            if expire_before and last is not None and last < expire_before:
                chosen[s.segment_id] = s
                reasons.add("expired")
            elif manual and expire_before and first is not None and first < expire_before:
                chosen[s.segment_id] = s
                reasons.add("expiring")
        small = [s for s in segs if s.rows < small_limit]
        if len(small) >= (2 if manual else options.min_segments):
            chosen.update({s.segment_id: s for s in small})
            reasons.add("small")
        if manual and unfolded_deletes:
            chosen.update({s.segment_id: s for s in segs})
            reasons.add("l0 deletes")
        if not chosen:
            continue
        inputs = sorted(chosen.values(), key=lambda s: s.segment_id)
        if len(inputs) == 1 and reasons == {"small"}:
            continue
        for first_input in range(0, len(inputs), options.max_inputs):
            part = tuple(inputs[first_input : first_input + options.max_inputs])
            if len(part) == 1 and reasons == {"small"}:
                continue
            plans.append(
                MixChoice(
                    vchannel=part[0].vchannel,
                    partition_id=partition_id,
                    inputs=part,
                    reason="+".join(sorted(reasons)),
                )
            )
    return plans
