"""Role configuration: frozen dataclasses with ``validate()``.

Each role's composition root takes one of these. ``common.configfile`` fills
them from flags, a YAML file and ``STRATA_*`` environment variables; tests and
embedders may build them directly. The ``check_*`` functions are shared by
``validate()`` and the loader, so a bad value is refused the same way whether
it came from code, a flag, the file or the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

STORAGE_SCHEMES = ("file", "s3")
WAL_BACKENDS = ("local", "nats")
NATS_MAX_REPLICAS = 5
#: Milvus's metrics port (``metrics.port`` in milvus.yaml): every role process's /metrics and /healthz.
DEFAULT_METRICS_PORT = 9091


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


def check_wal_backend(value: str) -> None:
    if value not in WAL_BACKENDS:
        raise ValueError(f"wal backend must be one of {', '.join(WAL_BACKENDS)}, got {value!r}")


def check_nats_servers(value: str) -> None:
    """Accept a comma-separated list of ``nats://HOST:PORT`` (or ``tls://``, or bare ``HOST:PORT``)."""
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise ValueError("nats servers must list at least one nats://HOST:PORT")
    for item in items:
        parts = urlsplit(item if "://" in item else f"nats://{item}")
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme not in ("nats", "tls") or not parts.hostname or port is None:
            raise ValueError(f"nats server must be nats://HOST:PORT, got {item!r}")


def check_nats_replicas(value: int) -> None:
    if not 1 <= value <= NATS_MAX_REPLICAS:
        raise ValueError(f"nats replicas must be 1 to {NATS_MAX_REPLICAS}, got {value}")


#: ``common.security.tlsMode``: 0 plaintext, 1 one-way TLS, 2 mutual TLS (Milvus's values).
TLS_MODES = (0, 1, 2)


def check_tls_mode(value: int) -> None:
    if value not in TLS_MODES:
        raise ValueError(f"tlsMode must be 0 (off), 1 (one-way TLS) or 2 (mutual TLS), got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SecurityConfig:
    """Authentication, RBAC and TLS of the proxy (Milvus's ``common.security`` and ``tls`` keys).

    The coordinator reads ``default_root_password`` once, when it creates the ``root`` user on
    the cluster's first start; the proxy reads the rest. Never logged (``repr=False``).
    """

    # common.security.authorizationEnabled: off by default, as in Milvus.
    authorization_enabled: bool = False
    # common.security.defaultRootPassword: root's password when the cluster is first started.
    default_root_password: str = field(default="Milvus", repr=False)
    # common.security.defaultRootPasswordFile (Strata's own): a file holding that password instead
    # (a Kubernetes or Compose secret), read by the coordinator when it starts; wins over the above.
    default_root_password_file: str = ""
    # common.security.superUsers: comma-separated user names that may set another user's password
    # without giving the old one (Milvus's meaning: the only check they skip).
    super_users: str | None = None
    # common.security.tlsMode: 0 off, 1 one-way (server certificate), 2 mutual (client certificate too).
    tls_mode: int = 0
    # tls.serverPemPath, tls.serverKeyPath, tls.caPemPath: PEM files of the proxy's certificate chain,
    # its private key, and the CA that signs client certificates (mutual TLS).
    server_pem_path: str = ""
    server_key_path: str = field(default="", repr=False)
    ca_pem_path: str = ""

    def validate(self) -> None:
        check_tls_mode(self.tls_mode)
        if not self.default_root_password:
            raise ValueError("common.security.defaultRootPassword must not be empty")
        if self.tls_mode >= 1 and not (self.server_pem_path and self.server_key_path):
            raise ValueError("tlsMode 1 and 2 need tls.serverPemPath and tls.serverKeyPath")
        if self.tls_mode == 2 and not self.ca_pem_path:
            raise ValueError("tlsMode 2 (mutual TLS) needs tls.caPemPath")

    def super_user_names(self) -> frozenset[str]:
        """The names in ``super_users``, blanks around and empty names dropped."""
        return frozenset(n.strip() for n in (self.super_users or "").split(",") if n.strip())

    def root_password(self) -> str:
        """root's first password: the file's content (one trailing newline dropped), else the setting.

        Raises ``ValueError`` if the file cannot be read or is empty.
        """
        if not self.default_root_password_file:
            return self.default_root_password
        try:
            with open(self.default_root_password_file, encoding="utf-8") as f:
                password = f.read().removesuffix("\n").removesuffix("\r")
        except OSError as err:
            raise ValueError(f"cannot read common.security.defaultRootPasswordFile: {err.strerror or err}") from err
        if not password:
            raise ValueError("common.security.defaultRootPasswordFile is empty")
        return password


#: ``trace.exporter`` (Milvus's names; Milvus also has jaeger, whose collectors take OTLP now).
TRACE_EXPORTERS = ("noop", "stdout", "otlp")


def check_trace_exporter(value: str) -> None:
    if value not in TRACE_EXPORTERS:
        raise ValueError(f"trace exporter must be one of {', '.join(TRACE_EXPORTERS)}, got {value!r}")


def check_fraction(value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"must be in [0, 1], got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceConfig:
    """OpenTelemetry tracing of every role (Milvus's ``trace`` section; ``common/tracing/``)."""

    # trace.exporter: noop (no tracing: no span is made and no interceptor installed), stdout (one JSON
    # span a line on standard output, for debugging) or otlp (batched to an OTLP/gRPC collector).
    exporter: str = "noop"
    # trace.sampleFraction: the share of new traces recorded; a request that arrives with a sampled
    # W3C traceparent is always recorded. Milvus's default is 0 (only those); Strata records every
    # request once an exporter is chosen.
    sample_fraction: float = 1.0
    # trace.otlp.endpoint: HOST:PORT of the OTLP/gRPC collector (required with exporter otlp).
    otlp_endpoint: str = ""
    # trace.otlp.secure: TLS to the collector.
    otlp_secure: bool = False

    def validate(self) -> None:
        check_trace_exporter(self.exporter)
        check_fraction(self.sample_fraction)
        if self.exporter == "otlp" and not self.otlp_endpoint:
            raise ValueError("trace.exporter otlp needs trace.otlp.endpoint (HOST:PORT of the collector)")


@dataclass(frozen=True, slots=True, kw_only=True)
class InternalTlsConfig:
    """TLS of the gRPC traffic between the roles (``common/internaltls.py``); off by default.

    Milvus's keys (2.5+): ``common.security.internaltlsEnabled`` and ``internaltls.*``. Every role's
    server presents ``serverPemPath`` / ``serverKeyPath``; every role's channel checks that certificate
    against ``caPemPath`` under the name ``sni``. ``mutual`` (Strata's own; Milvus's internal TLS is
    one-way) makes every server also require a client certificate signed by ``caPemPath``, which each
    role's channels present: the same certificate and key (it needs both the serverAuth and the
    clientAuth usage, or none). Never logged in full (the key path is ``repr=False``).
    """

    # common.security.internaltlsEnabled
    enabled: bool = False
    # internaltls.serverPemPath, internaltls.serverKeyPath, internaltls.caPemPath
    server_pem_path: str = ""
    server_key_path: str = field(default="", repr=False)
    ca_pem_path: str = ""
    # internaltls.sni: the name the roles' certificate is checked against (Milvus's default).
    sni: str = "localhost"
    # internaltls.mutual (Strata's own): servers require the channels' certificate too.
    mutual: bool = False

    def validate(self) -> None:
        if not self.enabled:
            return
        missing = [key for key, value in (("internaltls.serverPemPath", self.server_pem_path),
                                          ("internaltls.serverKeyPath", self.server_key_path),
                                          ("internaltls.caPemPath", self.ca_pem_path),
                                          ("internaltls.sni", self.sni)) if not value]
        if missing:
            raise ValueError(f"common.security.internaltlsEnabled needs {', '.join(missing)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonConfig:
    etcd: str
    etcd_root: str = "strata"
    host: str = "127.0.0.1"
    port: int = 0
    session_ttl_seconds: int = 15
    security: SecurityConfig = field(default_factory=SecurityConfig)
    internal_tls: InternalTlsConfig = field(default_factory=InternalTlsConfig)
    # HTTP port of the process's /metrics, /healthz and /log/level on ``host`` (common/opsserver.py):
    # None serves none, 0 any free port. The config file's default is Milvus's 9091.
    metrics_port: int | None = None
    trace: TraceConfig = field(default_factory=TraceConfig)

    def validate(self) -> None:
        check_etcd_endpoint(self.etcd)
        check_port(self.port)
        if self.metrics_port is not None:
            check_port(self.metrics_port)
        check_positive(self.session_ttl_seconds)
        self.security.validate()
        self.internal_tls.validate()
        self.trace.validate()


def check_spark_master(value: str) -> None:
    """``local``, ``local[N]``, ``local[*]``, or a ``spark://`` / ``k8s://`` / ``yarn`` master."""
    if value in ("local", "yarn") or value.startswith(("local[", "spark://", "k8s://", "mesos://")):
        return
    raise ValueError(f"spark master must be local[*], spark://HOST:PORT or k8s://..., got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class JobsConfig:
    """Offline jobs on Spark (compaction, bulk import) run by the coordinator (``jobs``)."""

    # local[*] in standalone; spark://HOST:PORT or k8s://https://HOST:PORT in a cluster (client mode).
    spark_master: str = "local[*]"
    # Extra Spark settings, "key=value;key=value" (spark.executor.instances=4;...).
    spark_conf: str = ""
    driver_memory: str = "2g"
    executor_memory: str = ""
    shuffle_partitions: int = 8
    job_timeout_seconds: float = 3600.0
    # Where each job's work directory goes, under tmp/ ("" = strata-jobs in the system temp directory;
    # standalone sets DATA_DIR/jobs).
    work_dir: str = ""
    # Automatic compaction: a round every this many seconds (0 = only manual compact()).
    compaction_interval_seconds: float = 60.0
    # Segments younger than this (since they were flushed) are left to settle first.
    compaction_min_age_seconds: float = 600.0
    # Size of a compaction output (and of an import's segments): Milvus's segment maxSize (1024 MB).
    # Growing segments seal at 128 MiB (streamingnode.segment_max_bytes); compaction merges them up
    # to this, so a large collection is searched in a few big graphs rather than many small ones.
    compaction_target_bytes: int = 1 << 30
    # Merge the small segments of a vchannel and partition once there are this many.
    compaction_min_segments: int = 4
    # Rewrite a segment once this share of its rows is deleted.
    compaction_delete_ratio: float = 0.2
    # Fold a vchannel's L0 deletes into its segments once this many settled L0 segments piled up.
    l0_trigger_segments: int = 16
    # A compaction job waits while loaded collections are loading (after a restart, say: its Spark
    # JVM would compete with the index loads and builds), but at most this long.
    compaction_yield_seconds: float = 600.0

    def validate(self) -> None:
        check_spark_master(self.spark_master)
        check_positive(self.shuffle_partitions)
        check_positive(self.job_timeout_seconds)
        check_non_negative(self.compaction_interval_seconds)
        check_non_negative(self.compaction_min_age_seconds)
        check_positive(self.compaction_target_bytes)
        check_positive(self.compaction_min_segments)
        if not 0 < self.compaction_delete_ratio <= 1:
            raise ValueError(f"compaction_delete_ratio must be in (0, 1], got {self.compaction_delete_ratio}")
        check_positive(self.l0_trigger_segments)
        check_non_negative(self.compaction_yield_seconds)


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
    jobs: JobsConfig = field(default_factory=JobsConfig)

    def validate(self) -> None:
        self.common.validate()
        self.jobs.validate()
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
    # Directory of the local WAL; required with the local backend, unused with nats.
    wal_dir: str = ""
    # Object storage the flusher writes segments to; shared with query nodes (and the coordinator's GC).
    storage: str
    # "local": a directory of segment files (wal_dir); "nats": JetStream streams on wal_nats_servers.
    wal_backend: str = "local"
    # Comma-separated nats://HOST:PORT of the JetStream cluster (the nats backend).
    wal_nats_servers: str = ""
    # Copies JetStream keeps of each pchannel's stream (1, or 3 for a cluster that survives a server).
    wal_nats_replicas: int = 1
    tick_interval_seconds: float = 0.2
    # Size of one file of the local WAL; truncation removes whole files.
    wal_segment_bytes: int = 64 << 20
    # Seconds between truncations of each WAL below its vchannels' checkpoints.
    truncate_interval_seconds: float = 2.0
    # Truncation never passes an open reader's position (a consumer loading, or slower than the
    # flusher) unless that reader read nothing for this long (streamingnode/wal/holds.py).
    wal_read_hold_seconds: float = 600.0
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
        for name in ("wal_segment_bytes", "truncate_interval_seconds", "wal_read_hold_seconds", "flush_segment_buffer_bytes",
                     "flush_memory_limit_bytes", "segment_max_bytes", "segment_max_rows"):
            check_positive(getattr(self, name))
        check_storage_uri(self.storage)
        check_wal_backend(self.wal_backend)
        if self.wal_backend == "local" and not self.wal_dir:
            raise ValueError("wal_dir is required with wal_backend local")
        if self.wal_backend == "nats":
            if not self.wal_nats_servers:
                raise ValueError("wal_nats_servers is required with wal_backend nats (nats://HOST:PORT,...)")
            check_nats_servers(self.wal_nats_servers)
        check_nats_replicas(self.wal_nats_replicas)


MIB = 1 << 20
#: gRPC caps a message at 2 GiB - 1 (a signed 32-bit length).
GRPC_MAX_MESSAGE = (1 << 31) - 1


def check_message_size(value: int) -> None:
    """A gRPC message size limit: 1 byte to 2 GiB - 1 (what gRPC can frame)."""
    if not 0 < value <= GRPC_MAX_MESSAGE:
        raise ValueError(f"must be 1 to {GRPC_MAX_MESSAGE} bytes, got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyLimits:
    """What one request may ask of the proxy; refused before any work (``proxy/limits.py``).

    Milvus's names and defaults (Milvus 2.5/2.6 ``milvus.yaml``), except ``max_expr_length``,
    which Milvus does not have.
    """

    # proxy.grpc.serverMaxRecvSize: the largest request the proxy's gRPC server takes (64 MiB);
    # a larger one is refused by gRPC itself with RESOURCE_EXHAUSTED, before it is read.
    server_max_recv_size: int = 64 * MIB
    # proxy.grpc.serverMaxSendSize: the largest answer it sends (256 MiB).
    server_max_send_size: int = 256 * MIB
    # quotaAndLimits.limits.topK: a search's limit (+ offset) at most.
    max_topk: int = 16384
    # quotaAndLimits.limits.nq: query vectors in one search at most.
    max_nq: int = 16384
    # quotaAndLimits.limits.maxQueryResultWindow: a query's offset + limit at most.
    max_query_result_window: int = 16384
    # quotaAndLimits.limits.maxOutputSize: bytes of one search or query result at most (100 MiB);
    # a search whose nq x topk hits cannot fit is refused before it runs.
    max_output_size: int = 100 * MIB
    # Strata's own: characters of a filter expression at most (16 MiB: about 2 million ids
    # written out in an `in` list). Milvus bounds filters only by serverMaxRecvSize.
    max_expr_length: int = 16 * MIB
    # proxy.slowQuerySpanInSeconds (5 s), in milliseconds: not a limit, the latency from which the
    # web console lists a request among the slow ones (proxy/slow_requests.py); 0: every request.
    slow_request_ms: int = 5000
    # proxy.accessLog.enable (off, as in Milvus): write one ``access`` line per request
    # (proxy/access.py); the request metrics and the slow requests are kept either way.
    access_log: bool = False

    def validate(self) -> None:
        check_message_size(self.server_max_recv_size)
        check_message_size(self.server_max_send_size)
        for name in ("max_topk", "max_nq", "max_query_result_window", "max_output_size", "max_expr_length"):
            check_positive(getattr(self, name))
        check_non_negative(self.slow_request_ms)


#: Milvus's defaults, for code given no configuration.
DEFAULT_LIMITS = ProxyLimits()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyHttpConfig:
    """The proxy's RESTful API (Milvus's ``proxy.http.*``; ``proxy/http/``).

    Milvus 2.6 serves it on the gRPC port (19530) by default; Strata serves it on a port of its own
    (``proxy.http.port``, 19531 from the config file; 0 = any free port) on ``common.host``.
    """

    enabled: bool = True
    port: int = 0

    def validate(self) -> None:
        check_port(self.port)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryNodeConfig:
    common: CommonConfig
    # Object storage the query node loads sealed segments from (the streaming nodes' storage).
    storage: str
    # Also run the proxy in this process, serving the Milvus API on this port (standalone does):
    # its reads reach this node's delegators without a gRPC hop. None: no proxy here.
    proxy_port: int | None = None
    # The limits of that proxy (the proxy section's keys).
    proxy_limits: ProxyLimits = field(default_factory=ProxyLimits)
    # Its RESTful API (proxy.http.*).
    proxy_http: ProxyHttpConfig = field(default_factory=ProxyHttpConfig)

    def validate(self) -> None:
        self.common.validate()
        check_storage_uri(self.storage)
        if self.proxy_port is not None:
            check_port(self.proxy_port)
        self.proxy_limits.validate()
        self.proxy_http.validate()


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    common: CommonConfig = field(default_factory=lambda: CommonConfig(etcd="127.0.0.1:2379", port=19530))
    limits: ProxyLimits = field(default_factory=ProxyLimits)
    http: ProxyHttpConfig = field(default_factory=ProxyHttpConfig)

    def validate(self) -> None:
        self.common.validate()
        self.limits.validate()
        self.http.validate()
