"""The segment manifest: one immutable JSON document per segment version naming every file.

Readers use only the files a manifest lists; a file in storage that no committed
manifest names is garbage (a write that was never committed). Each change makes a
new manifest with ``version + 1``; the old one stays valid for readers that hold it.
The JSON shape is documented in README.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from common.errors import InvalidArgument
from common.segment import SegmentLevel
from common.storage.errors import CorruptObject
from common.storage.layout import ALL_PARTITIONS

#: Value of the manifest's ``"format"`` key; bumped on any change old readers would misread.
MANIFEST_FORMAT = 1


def _level(value: object) -> SegmentLevel:
    """``value`` as a ``SegmentLevel``: a member, or its name as the manifest's JSON has it ("L0", "L1")."""
    if isinstance(value, SegmentLevel):
        return value
    if isinstance(value, str) and value in SegmentLevel.__members__:
        return SegmentLevel[value]
    raise InvalidArgument(f"segment level must be L0 or L1, got {value!r}")


def _check_int(what: str, value: object, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{what} must be an integer, got {value!r}")
    if value < minimum:
        raise InvalidArgument(f"{what} must be at least {minimum}, got {value}")


def _check_ts_range(what: str, rows: int, min_ts: int, max_ts: int) -> None:
    _check_int(f"{what} rows", rows)
    _check_int(f"{what} min_ts", min_ts)
    _check_int(f"{what} max_ts", max_ts)
    if min_ts > max_ts:
        raise InvalidArgument(f"{what} has min_ts {min_ts} > max_ts {max_ts}")


@dataclass(frozen=True, slots=True, kw_only=True)
class InsertLog:
    """One batch of rows, stored as one Parquet file per column group (same rows, same order)."""

    log_id: int
    rows: int
    min_ts: int
    max_ts: int
    files: dict[int, str]  # column group id -> path; treat as read-only

    def __post_init__(self) -> None:
        _check_int("insert log id", self.log_id)
        _check_ts_range(f"insert log {self.log_id}", self.rows, self.min_ts, self.max_ts)
        if not self.files:
            raise InvalidArgument(f"insert log {self.log_id} names no files")
        for group_id, path in self.files.items():
            _check_int(f"insert log {self.log_id} group id", group_id)
            if not isinstance(path, str) or not path:
                raise InvalidArgument(f"insert log {self.log_id} group {group_id} has no path")
        object.__setattr__(self, "files", dict(sorted(self.files.items())))


@dataclass(frozen=True, slots=True, kw_only=True)
class DeltaLog:
    """One batch of deletes: a Parquet file of ``(pk, ts)`` rows."""

    log_id: int
    rows: int
    min_ts: int
    max_ts: int
    path: str

    def __post_init__(self) -> None:
        _check_int("delta log id", self.log_id)
        _check_ts_range(f"delta log {self.log_id}", self.rows, self.min_ts, self.max_ts)
        if not isinstance(self.path, str) or not self.path:
            raise InvalidArgument(f"delta log {self.log_id} has no path")


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentManifest:
    """Every file of one version of a segment.

    Invariants (checked on construction): ``rows`` is the sum of the insert logs'
    rows; log ids are unique per kind; an L0 segment has no insert or stats logs.
    """

    segment_id: int
    collection_id: int
    partition_id: int
    vchannel: str
    level: SegmentLevel
    version: int = 0
    rows: int = 0
    insert_logs: tuple[InsertLog, ...] = ()
    delta_logs: tuple[DeltaLog, ...] = ()
    stats_logs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_int("segment id", self.segment_id)
        _check_int("collection id", self.collection_id)
        _check_int("partition id", self.partition_id, ALL_PARTITIONS)
        _check_int("manifest version", self.version)
        if not isinstance(self.vchannel, str) or not self.vchannel:
            raise InvalidArgument("segment manifest needs a vchannel")
        object.__setattr__(self, "level", _level(self.level))
        object.__setattr__(self, "insert_logs", tuple(self.insert_logs))
        object.__setattr__(self, "delta_logs", tuple(self.delta_logs))
        object.__setattr__(self, "stats_logs", tuple(self.stats_logs))
        if self.rows != sum(log.rows for log in self.insert_logs):
            raise InvalidArgument(f"segment {self.segment_id} rows {self.rows} differ from its insert logs' rows")
        for kind, ids in (
            ("insert", [log.log_id for log in self.insert_logs]),
            ("delta", [log.log_id for log in self.delta_logs]),
        ):
            if len(set(ids)) != len(ids):
                raise InvalidArgument(f"segment {self.segment_id} lists a {kind} log id twice")
        if self.level == SegmentLevel.L0 and (self.insert_logs or self.stats_logs):
            raise InvalidArgument(f"L0 segment {self.segment_id} cannot have insert or stats logs")
        if any(not isinstance(p, str) or not p for p in self.stats_logs):
            raise InvalidArgument(f"segment {self.segment_id} has an empty stats log path")

    def files(self) -> list[str]:
        """Every path this manifest names (insert, delta and stats logs)."""
        paths = [p for log in self.insert_logs for p in log.files.values()]
        paths.extend(log.path for log in self.delta_logs)
        paths.extend(self.stats_logs)
        return paths

    def with_insert_log(self, log: InsertLog, stats_log: str) -> SegmentManifest:
        """The next version: ``log`` appended (with its stats log), rows added."""
        return replace(
            self,
            version=self.version + 1,
            rows=self.rows + log.rows,
            insert_logs=(*self.insert_logs, log),
            stats_logs=(*self.stats_logs, stats_log),
        )

    def with_delta_log(self, log: DeltaLog) -> SegmentManifest:
        """The next version: ``log`` appended."""
        return replace(self, version=self.version + 1, delta_logs=(*self.delta_logs, log))

    def to_json(self) -> bytes:
        """UTF-8 JSON, keys in a fixed order (README.md documents the shape)."""
        doc = {
            "format": MANIFEST_FORMAT,
            "collection_id": self.collection_id,
            "partition_id": self.partition_id,
            "segment_id": self.segment_id,
            "vchannel": self.vchannel,
            "level": self.level.name,
            "version": self.version,
            "rows": self.rows,
            "insert_logs": [
                {
                    "log_id": log.log_id,
                    "rows": log.rows,
                    "min_ts": log.min_ts,
                    "max_ts": log.max_ts,
                    "files": {str(group): path for group, path in log.files.items()},
                }
                for log in self.insert_logs
            ],
            "delta_logs": [
                {"log_id": log.log_id, "rows": log.rows, "min_ts": log.min_ts, "max_ts": log.max_ts, "path": log.path}
                for log in self.delta_logs
            ],
            "stats_logs": list(self.stats_logs),
        }
        return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    @staticmethod
    def from_json(data: bytes | str) -> SegmentManifest:
        """Inverse of ``to_json``; unknown keys are ignored. Raises ``CorruptObject``."""
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError) as err:
            raise CorruptObject(f"segment manifest is not JSON: {err}") from None
        if not isinstance(doc, dict):
            raise CorruptObject("segment manifest is not a JSON object")
        if doc.get("format") != MANIFEST_FORMAT:
            raise CorruptObject(f"unsupported segment manifest format {doc.get('format')!r}")
        try:
            return SegmentManifest(
                collection_id=doc["collection_id"],
                partition_id=doc["partition_id"],
                segment_id=doc["segment_id"],
                vchannel=doc["vchannel"],
                level=doc["level"],
                version=doc["version"],
                rows=doc["rows"],
                insert_logs=tuple(_insert_log(d) for d in _list(doc, "insert_logs")),
                delta_logs=tuple(_delta_log(d) for d in _list(doc, "delta_logs")),
                stats_logs=tuple(_list(doc, "stats_logs")),
            )
        except KeyError as err:
            raise CorruptObject(f"segment manifest lacks {err}") from None
        except (InvalidArgument, TypeError, AttributeError) as err:
            raise CorruptObject(f"malformed segment manifest: {err}") from None


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    value = doc[key]
    if not isinstance(value, list):
        raise InvalidArgument(f"{key} must be a list")
    return value


def _insert_log(d: dict[str, Any]) -> InsertLog:
    files = d["files"]
    if not isinstance(files, dict) or not all(isinstance(k, str) and k.isascii() and k.isdigit() for k in files):
        raise InvalidArgument("insert log files must map group ids to paths")
    return InsertLog(
        log_id=d["log_id"],
        rows=d["rows"],
        min_ts=d["min_ts"],
        max_ts=d["max_ts"],
        files={int(group): path for group, path in files.items()},
    )


def _delta_log(d: dict[str, Any]) -> DeltaLog:
    return DeltaLog(log_id=d["log_id"], rows=d["rows"], min_ts=d["min_ts"], max_ts=d["max_ts"], path=d["path"])
