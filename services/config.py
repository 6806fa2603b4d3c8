"""Role configuration: frozen dataclasses with ``validate()``.

Each role's composition root takes one of these. ``services.configfile`` fills
them from flags, a YAML file and ``STRATA_*`` environment variables; tests and
embedders may build them directly. The ``check_*`` functions are shared by
``validate()`` and the loader, so a bad value is refused the same way whether
it came from code, a flag, the file or the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

STORAGE_SCHEMES = ("file", "s3")


def check_etcd_endpoint(value: str) -> None:
    """Refuse anything that is not ``HOST:PORT`` with a numeric port."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"etcd endpoint must be HOST:PORT, got {value!r}")


def check_port(value: int) -> None:
    """Ports are 0 (any free port) to 65535."""
    if not 0 <= value < 65536:
        raise ValueError(f"port {value} out of range 0..65535")


def check_positive(value: float) -> None:
    if value <= 0:
        raise ValueError(f"must be positive, got {value}")


def check_non_negative(value: float) -> None:
    if value < 0:
        raise ValueError(f"must not be negative, got {value}")


def check_storage_uri(value: str) -> None:
    """Accept ``file:///ABSOLUTE/PATH`` and ``s3://BUCKET[/PREFIX]``; refuse everything else."""
    parts = urlsplit(value)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise ValueError(f"storage file URI must be file:///ABSOLUTE/PATH, got {value!r}")
        return
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"storage s3 URI must be s3://BUCKET[/PREFIX], got {value!r}")
        return
    raise ValueError(f"storage must be file:///PATH or s3://BUCKET/PREFIX, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonConfig:
    etcd: str
    etcd_root: str = "strata"
    host: str = "127.0.0.1"
    port: int = 0
    session_ttl_seconds: int = 15

    def validate(self) -> None:
        check_etcd_endpoint(self.etcd)
        check_port(self.port)
        check_positive(self.session_ttl_seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorConfig:
    common: CommonConfig
    cluster_name: str = "strata"
    pchannel_count: int = 4
    # At most one pchannel moves to even out the streaming nodes' load per this many seconds.
    rebalance_cooldown_seconds: float = 10.0
    # Object storage of the segments; without it files of dropped segments are never removed.
    storage: str | None = None
    # Files of dropped segments (and files no segment names) are removed this long after.
    gc_retention_seconds: float = 3600.0
    gc_interval_seconds: float = 600.0

    def validate(self) -> None:
        self.common.validate()
        if self.pchannel_count < 1:
            raise ValueError("pchannel_count must be at least 1")
        check_non_negative(self.rebalance_cooldown_seconds)
        check_non_negative(self.gc_retention_seconds)
        check_positive(self.gc_interval_seconds)
        if self.storage is not None:
            check_storage_uri(self.storage)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamingNodeConfig:
    common: CommonConfig
    wal_dir: str
    # Object storage the flusher writes segments to; shared with query nodes (and the coordinator's GC).
    storage: str
    wal_backend: str = "local"
    tick_interval_seconds: float = 0.2
    # Size of one file of the local WAL; truncation removes whole files.
    wal_segment_bytes: int = 64 << 20
    # Seconds between truncations of each WAL below its vchannels' checkpoints.
    truncate_interval_seconds: float = 2.0
    # A growing segment is sealed (and written to object storage) at this size or row count;
    # the WAL is kept from the oldest growing segment on, so these bound it.
    segment_max_bytes: int = 128 << 20
    segment_max_rows: int = 1_000_000
    # The flushers' buffers: a growing segment's rows are written once they pass the first,
    # the largest buffers once all of them together pass the second.
    flush_segment_buffer_bytes: int = 16 << 20
    flush_memory_limit_bytes: int = 256 << 20

    def validate(self) -> None:
        self.common.validate()
        if self.tick_interval_seconds <= 0:
            raise ValueError("tick interval must be positive")
        for name in ("wal_segment_bytes", "truncate_interval_seconds", "flush_segment_buffer_bytes",
                     "flush_memory_limit_bytes", "segment_max_bytes", "segment_max_rows"):
            check_positive(getattr(self, name))
        check_storage_uri(self.storage)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryNodeConfig:
    common: CommonConfig
    # Object storage the query node loads sealed segments from (the streaming nodes' storage).
    storage: str

    def validate(self) -> None:
        self.common.validate()
        check_storage_uri(self.storage)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    common: CommonConfig = field(default_factory=lambda: CommonConfig(etcd="127.0.0.1:2379", port=19530))

    def validate(self) -> None:
        self.common.validate()
