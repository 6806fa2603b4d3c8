"""What the coordinator hands a Spark job and what the job hands back: JSON documents.

The coordinator writes a *spec* (``CompactionSpec`` or ``ImportSpec``) that names
everything the job needs — the object store, the schema, the input segments'
manifests, the id ranges it may use — so the job never talks to etcd or the
coordinator. The job answers with a *result* (``JobResult``): the segments it
wrote, or an error. Both are plain frozen dataclasses with ``to_json`` /
``from_json``; unknown keys are ignored so either side may grow.

Ids are allocated by the coordinator before the job starts and written into the
spec (segment ids, auto-id primary keys, log ids), so a job that is run again
after a crash writes the same paths and never collides with anything else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from common.errors import InvalidArgument
from common.schema import CollectionSchema


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentRef:
    """An input segment: where its manifest is and what the coordinator knows of it."""

    segment_id: int
    partition_id: int
    manifest: str
    rows: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexRef:
    """An index of the collection, as the catalog stores it (``field_index_spec`` reads ``params``)."""

    field_name: str
    index_id: int
    params: dict[str, str]


@dataclass(frozen=True, slots=True, kw_only=True)
class MixPlan:
    """Merge ``inputs`` (one vchannel and partition) into new segments without deleted or expired rows.

    ``deletes`` are segments whose delta logs apply (the vchannel's L0 segments); the
    inputs' own delta logs apply too. A row goes when a delete of its key has a larger
    timestamp, when its ``_ts`` is below ``expire_before`` (collection TTL; 0 = none), or
    when a newer version of its key is among the inputs. Outputs get ids
    ``segment_id_base + i`` for ``i < segment_id_count`` and at most ``target_rows`` rows each
    (roughly: rows are range-partitioned by primary key).
    """

    plan_id: int
    vchannel: str
    partition_id: int
    inputs: tuple[SegmentRef, ...]
    deletes: tuple[SegmentRef, ...] = ()
    expire_before: int = 0
    target_rows: int
    segment_id_base: int
    segment_id_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class L0Plan:
    """Fold the deletes of the L0 segments ``l0`` into ``targets`` (the vchannel's L1 segments).

    Each target gets, as a new delta log with id ``log_id_base + i`` (``i`` its place in
    ``targets``), the deletes that remove at least one of its rows, and a new manifest version.
    """

    plan_id: int
    vchannel: str
    l0: tuple[SegmentRef, ...]
    targets: tuple[SegmentRef, ...]
    log_id_base: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSpec:
    job_id: int
    storage_uri: str
    collection_id: int
    schema_json: str
    indexes: tuple[IndexRef, ...] = ()
    mix: tuple[MixPlan, ...] = ()
    l0: tuple[L0Plan, ...] = ()

    @property
    def schema(self) -> CollectionSchema:
        return CollectionSchema.from_json(self.schema_json)

    def to_json(self) -> str:
        return json.dumps({"kind": "compaction", **asdict(self)})

    @staticmethod
    def from_json(text: str | bytes) -> CompactionSpec:
        d = _doc(text, "compaction")
        return CompactionSpec(
            job_id=d["job_id"],
            storage_uri=d["storage_uri"],
            collection_id=d["collection_id"],
            schema_json=d["schema_json"],
            indexes=tuple(IndexRef(**_known(IndexRef, i)) for i in d.get("indexes", ())),
            mix=tuple(
                MixPlan(
                    **{
                        **_known(MixPlan, p),
                        "inputs": tuple(SegmentRef(**_known(SegmentRef, s)) for s in p["inputs"]),
                        "deletes": tuple(SegmentRef(**_known(SegmentRef, s)) for s in p.get("deletes", ())),
                    }
                )
                for p in d.get("mix", ())
            ),
            l0=tuple(
                L0Plan(
                    **{
                        **_known(L0Plan, p),
                        "l0": tuple(SegmentRef(**_known(SegmentRef, s)) for s in p["l0"]),
                        "targets": tuple(SegmentRef(**_known(SegmentRef, s)) for s in p["targets"]),
                    }
                )
                for p in d.get("l0", ())
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportFile:
    """One unit of input: a Parquet or JSON file, or the ``.npy`` files of one NumPy set (field -> path).

    ``rows`` is the coordinator's count (exact for Parquet and NumPy, an upper bound for JSON);
    the file's auto-id keys are ``auto_id_base + id_offset + i``.
    """

    name: str  # as the user gave it, for messages
    format: str  # "parquet" | "json" | "numpy"
    paths: dict[str, str]  # "" -> path (parquet/json) or field name -> path (numpy)
    rows: int
    id_offset: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportSpec:
    """Read ``files``, validate them against the schema, write them as segments of the collection.

    Rows get ``_ts = import_ts``; an auto-id key gets the ids the coordinator reserved. Rows go
    to vchannels by primary-key hash and to ``partition_id`` (or by partition-key hash over
    ``key_partitions``); each (vchannel, partition) is split into ``buckets`` segments with ids
    from ``segment_id_base`` (``segment_id_count`` of them).
    """

    job_id: int
    storage_uri: str
    collection_id: int
    schema_json: str
    vchannels: tuple[str, ...]
    partition_id: int
    key_partitions: tuple[int, ...] = ()
    files: tuple[ImportFile, ...]
    import_ts: int
    auto_id_base: int = 0
    buckets: int = 1
    segment_id_base: int
    segment_id_count: int
    indexes: tuple[IndexRef, ...] = ()

    @property
    def schema(self) -> CollectionSchema:
        return CollectionSchema.from_json(self.schema_json)

    def to_json(self) -> str:
        return json.dumps({"kind": "import", **asdict(self)})

    @staticmethod
    def from_json(text: str | bytes) -> ImportSpec:
        d = _doc(text, "import")
        return ImportSpec(
            **{
                **_known(ImportSpec, d),
                "vchannels": tuple(d["vchannels"]),
                "key_partitions": tuple(d.get("key_partitions", ())),
                "files": tuple(ImportFile(**_known(ImportFile, f)) for f in d["files"]),
                "indexes": tuple(IndexRef(**_known(IndexRef, i)) for i in d.get("indexes", ())),
            }
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputSegment:
    """A segment a job wrote completely (files, stats, index, manifest)."""

    segment_id: int
    partition_id: int
    vchannel: str
    rows: int
    manifest: str
    plan_id: int = 0
    min_ts: int = 0
    max_ts: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetUpdate:
    """An L0 target's new manifest version, and how many of its rows the new delta log deletes."""

    plan_id: int
    segment_id: int
    manifest: str
    deleted_rows: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    """What a job did. ``error`` set: it failed and nothing it wrote may become visible."""

    job_id: int
    error: str = ""
    rows: int = 0
    outputs: tuple[OutputSegment, ...] = ()
    targets: tuple[TargetUpdate, ...] = ()
    stats: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str | bytes) -> JobResult:
        d = _doc(text, None)
        return JobResult(
            job_id=d["job_id"],
            error=d.get("error", ""),
            rows=d.get("rows", 0),
            outputs=tuple(OutputSegment(**_known(OutputSegment, o)) for o in d.get("outputs", ())),
            targets=tuple(TargetUpdate(**_known(TargetUpdate, t)) for t in d.get("targets", ())),
            stats=dict(d.get("stats", {})),
        )


def _doc(text: str | bytes, kind: str | None) -> dict[str, Any]:
    try:
        d = json.loads(text)
    except ValueError as err:
        raise InvalidArgument(f"job document is not JSON: {err}") from None
    if not isinstance(d, dict):
        raise InvalidArgument("job document is not a JSON object")
    if kind is not None and d.pop("kind", None) != kind:
        raise InvalidArgument(f"job document is not a {kind} spec")
    return d


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``d`` that are fields of the dataclass ``cls`` (newer writers may add others)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}
