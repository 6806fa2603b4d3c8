"""Role configuration: frozen dataclasses with ``validate()``.

Issue #4 adds ``--config FILE`` and ``STRATA_*`` environment variables; for now
the CLI flags fill these directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonConfig:
    etcd: str
    etcd_root: str = "strata"
    host: str = "127.0.0.1"
    port: int = 0
    session_ttl_seconds: int = 15

    def validate(self) -> None:
        if ":" not in self.etcd:
            raise ValueError(f"--etcd must be HOST:PORT, got {self.etcd!r}")
        if not 0 <= self.port < 65536:
            raise ValueError(f"port {self.port} out of range")


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorConfig:
    common: CommonConfig
    cluster_name: str = "strata"
    pchannel_count: int = 4

    def validate(self) -> None:
        self.common.validate()
        if self.pchannel_count < 1:
            raise ValueError("pchannel_count must be at least 1")


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamingNodeConfig:
    common: CommonConfig
    wal_dir: str
    wal_backend: str = "local"
    tick_interval_seconds: float = 0.2

    def validate(self) -> None:
        self.common.validate()
        if self.tick_interval_seconds <= 0:
            raise ValueError("tick interval must be positive")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryNodeConfig:
    common: CommonConfig

    def validate(self) -> None:
        self.common.validate()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    common: CommonConfig = field(default_factory=lambda: CommonConfig(etcd="127.0.0.1:2379", port=19530))

    def validate(self) -> None:
        self.common.validate()
