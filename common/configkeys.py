"""Every key of the config file: its section, the dataclass field it fills, its check, its help.

``SETTINGS`` is the one list; ``configfile.py`` reads the file, the environment and the flags
against it, and README.md ("Running as a cluster") documents the same keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from common.config import (
    DEFAULT_METRICS_PORT,
    CommonConfig,
    CoordinatorConfig,
    InternalTlsConfig,
    JobsConfig,
    ProxyHttpConfig,
    ProxyLimits,
    QueryNodeConfig,
    SecurityConfig,
    StreamingNodeConfig,
    TraceConfig,
    check_etcd_endpoint,
    check_fraction,
    check_message_size,
    check_nats_replicas,
    check_nats_servers,
    check_non_negative,
    check_port,
    check_positive,
    check_spark_master,
    check_storage_uri,
    check_tls_mode,
    check_trace_exporter,
    check_wal_backend,
)

ROLES = ("coordinator", "streamingnode", "querynode", "proxy")
#: Sections of the file besides the roles': ``jobs`` configures the coordinator's Spark jobs.
#: ``tls`` holds the proxy's certificate files under Milvus's names (``tls.serverPemPath``, ...);
#: ``internaltls`` those of the traffic between the roles (``internaltls.serverPemPath``, ...).
#: ``trace`` configures OpenTelemetry tracing of every role (Milvus's names, ``trace.exporter``, ...).
SECTIONS = ("common", *ROLES, "jobs", "tls", "internaltls", "trace")
ENV_PREFIX = "STRATA_"
ENV_CONFIG_FILE = "STRATA_CONFIG"
ENV_ALIASES = {"STRATA_ETCD": "common.etcd", "STRATA_ETCD_ROOT": "common.etcd_root"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Setting:
    """One key of the file: where it lives and which dataclass field it fills."""

    section: str
    key: str
    target: type
    field: str
    help: str
    check: Callable[[Any], None] | None = None
    # Overrides the dataclass default: the proxy listens on 19530, other roles on any free port.
    default: int | None = None
    # A field with a default that is required all the same when this holds for the values of its
    # role (given or default); ``required_why`` ends the error message.
    required_if: Callable[[Mapping[str, Any]], bool] | None = None
    required_why: str = ""

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    @property
    def env(self) -> str:
        # Milvus's nested keys (common.security.tlsMode): STRATA_COMMON_SECURITY_TLSMODE.
        return f"{ENV_PREFIX}{self.section.upper()}_{self.key.upper().replace('.', '_')}"



def _port(role: str, default: int) -> Setting:
    return Setting(
        section=role,
        key="port",
        target=CommonConfig,
        field="port",
        help=f"gRPC port of the {role} on `common.host` (0 = any free port)",
        check=check_port,
        default=default,
    )


def _metrics_port(role: str) -> Setting:
    return Setting(
        section=role,
        key="metrics_port",
        target=CommonConfig,
        field="metrics_port",
        help=f"HTTP port of the {role} process's /metrics, /healthz and /log/level on `common.host` "
             "(empty = none, 0 = any free port)",
        check=check_port,
        default=DEFAULT_METRICS_PORT,
    )


SETTINGS: tuple[Setting, ...] = (
    Setting(section="common", key="etcd", target=CommonConfig, field="etcd",
            help="etcd endpoint HOST:PORT (required)", check=check_etcd_endpoint),
    Setting(section="common", key="etcd_root", target=CommonConfig, field="etcd_root",
            help="key prefix of this cluster in etcd"),
    Setting(section="common", key="host", target=CommonConfig, field="host",
            help="address the gRPC servers bind and advertise"),
    Setting(section="common", key="session_ttl_seconds", target=CommonConfig, field="session_ttl_seconds",
            help="lease TTL of the role's etcd session", check=check_positive),
    _port("coordinator", 0),
    *(_metrics_port(role) for role in ROLES),
    Setting(section="coordinator", key="pchannels", target=CoordinatorConfig, field="pchannel_count",
            help="number of WAL pchannels", check=check_positive),
    Setting(section="coordinator", key="cluster_name", target=CoordinatorConfig, field="cluster_name",
            help="cluster name, prefix of pchannel names"),
    Setting(section="coordinator", key="rebalance_cooldown_seconds", target=CoordinatorConfig,
            field="rebalance_cooldown_seconds",
            help="seconds between two pchannel moves that even out the streaming nodes' load",
            check=check_non_negative),
    Setting(section="coordinator", key="storage", target=CoordinatorConfig, field="storage",
            help="object storage of the segments, for garbage collection: file:///PATH or s3://BUCKET/PREFIX",
            check=check_storage_uri),
    Setting(section="coordinator", key="gc_retention_seconds", target=CoordinatorConfig,
            field="gc_retention_seconds",
            help="seconds before files of dropped segments (or files no segment names) are removed",
            check=check_non_negative),
    Setting(section="coordinator", key="gc_interval_seconds", target=CoordinatorConfig,
            field="gc_interval_seconds", help="seconds between two garbage collection rounds",
            check=check_positive),
    _port("streamingnode", 0),
    Setting(section="streamingnode", key="wal_dir", target=StreamingNodeConfig, field="wal_dir",
            help="directory of the local WAL (required with wal_backend local)",
            required_if=lambda v: v["wal_backend"] == "local", required_why="with wal_backend local"),
    Setting(section="streamingnode", key="wal_backend", target=StreamingNodeConfig, field="wal_backend",
            help="WAL backend: local (files under wal_dir) or nats (JetStream on wal_nats_servers)",
            check=check_wal_backend),
    Setting(section="streamingnode", key="wal_nats_servers", target=StreamingNodeConfig, field="wal_nats_servers",
            help="comma-separated nats://HOST:PORT of the JetStream cluster (required with wal_backend nats)",
            check=check_nats_servers),
    Setting(section="streamingnode", key="wal_nats_replicas", target=StreamingNodeConfig, field="wal_nats_replicas",
            help="copies JetStream keeps of each pchannel's stream, 1 to 5 (applied when a stream is created)",
            check=check_nats_replicas),
    Setting(section="streamingnode", key="tick_interval_seconds", target=StreamingNodeConfig,
            field="tick_interval_seconds", help="seconds between TimeTicks", check=check_positive),
    Setting(section="streamingnode", key="wal_segment_bytes", target=StreamingNodeConfig,
            field="wal_segment_bytes", help="bytes per file of the local WAL (truncation drops whole files)",
            check=check_positive),
    Setting(section="streamingnode", key="truncate_interval_seconds", target=StreamingNodeConfig,
            field="truncate_interval_seconds", help="seconds between WAL truncations below the checkpoints",
            check=check_positive),
    Setting(section="streamingnode", key="wal_read_hold_seconds", target=StreamingNodeConfig,
            field="wal_read_hold_seconds",
            help="truncation keeps an open reader's records unless it read nothing for this long",
            check=check_positive),
    Setting(section="streamingnode", key="segment_max_bytes", target=StreamingNodeConfig,
            field="segment_max_bytes", help="a growing segment is sealed at this many bytes", check=check_positive),
    Setting(section="streamingnode", key="segment_max_rows", target=StreamingNodeConfig,
            field="segment_max_rows", help="a growing segment is sealed at this many rows", check=check_positive),
    Setting(section="streamingnode", key="flush_segment_buffer_bytes", target=StreamingNodeConfig,
            field="flush_segment_buffer_bytes", help="a growing segment's buffered rows are written past this size",
            check=check_positive),
    Setting(section="streamingnode", key="flush_memory_limit_bytes", target=StreamingNodeConfig,
            field="flush_memory_limit_bytes",
            help="all flush buffers of the node together; past it the largest are written", check=check_positive),
    Setting(section="streamingnode", key="storage", target=StreamingNodeConfig, field="storage",
            help="object storage for flushed segments (required): file:///PATH or s3://BUCKET/PREFIX",
            check=check_storage_uri),
    _port("querynode", 0),
    Setting(section="querynode", key="storage", target=QueryNodeConfig, field="storage",
            help="object storage sealed segments are loaded from (required): file:///PATH or s3://BUCKET/PREFIX",
            check=check_storage_uri),
    Setting(section="querynode", key="proxy_port", target=QueryNodeConfig, field="proxy_port",
            help="also serve the Milvus API (the proxy) from this process on this port; unset: no proxy here",
            check=check_port),
    _port("proxy", 19530),
    # The proxy's limits (Milvus's names in parentheses); the standalone node's proxy reads them too.
    Setting(section="proxy", key="server_max_recv_size", target=ProxyLimits, field="server_max_recv_size",
            help="bytes of the largest request the proxy takes (Milvus proxy.grpc.serverMaxRecvSize)",
            check=check_message_size),
    Setting(section="proxy", key="server_max_send_size", target=ProxyLimits, field="server_max_send_size",
            help="bytes of the largest answer the proxy sends (Milvus proxy.grpc.serverMaxSendSize)",
            check=check_message_size),
    Setting(section="proxy", key="max_topk", target=ProxyLimits, field="max_topk",
            help="a search's limit + offset at most (Milvus quotaAndLimits.limits.topK)", check=check_positive),
    Setting(section="proxy", key="max_nq", target=ProxyLimits, field="max_nq",
            help="query vectors of one search at most (Milvus quotaAndLimits.limits.nq)", check=check_positive),
    Setting(section="proxy", key="max_query_result_window", target=ProxyLimits, field="max_query_result_window",
            help="a query's offset + limit at most (Milvus quotaAndLimits.limits.maxQueryResultWindow)",
            check=check_positive),
    Setting(section="proxy", key="max_output_size", target=ProxyLimits, field="max_output_size",
            help="bytes of one search or query result at most (Milvus quotaAndLimits.limits.maxOutputSize)",
            check=check_positive),
    Setting(section="proxy", key="max_expr_length", target=ProxyLimits, field="max_expr_length",
            help="characters of a filter expression at most (Strata's own; Milvus has no such limit)",
            check=check_positive),
    Setting(section="proxy", key="slow_request_ms", target=ProxyLimits, field="slow_request_ms",
            help="latency in ms from which the web console lists a request as slow (Milvus "
                 "proxy.slowQuerySpanInSeconds; 0: every request)", check=check_non_negative),
    Setting(section="proxy", key="accessLog.enable", target=ProxyLimits, field="access_log",
            help="write one access line per gRPC and RESTful request to the proxy's log (Milvus "
                 "proxy.accessLog.enable; off by default, as in Milvus)"),
    # The RESTful API (Milvus's proxy.http.*): proxy/http/, README "RESTful API".
    Setting(section="proxy", key="http.enabled", target=ProxyHttpConfig, field="enabled",
            help="serve the RESTful API v2 (/v2/vectordb/...) on proxy.http.port"),
    Setting(section="proxy", key="http.port", target=ProxyHttpConfig, field="port",
            help="HTTP port of the RESTful API on `common.host` (0 = any free port)", check=check_port,
            default=19531),
    # Authentication, RBAC and TLS (Milvus's names): common/config.py SecurityConfig, README "Security".
    Setting(section="common", key="security.authorizationEnabled", target=SecurityConfig,
            field="authorization_enabled", help="require users and check privileges on every Milvus RPC"),
    Setting(section="common", key="security.defaultRootPassword", target=SecurityConfig,
            field="default_root_password", help="password of root, set when the cluster first starts"),
    Setting(section="common", key="security.defaultRootPasswordFile", target=SecurityConfig,
            field="default_root_password_file",
            help="a file holding root's first password (a secret), instead of defaultRootPassword"),
    Setting(section="common", key="security.superUsers", target=SecurityConfig, field="super_users",
            help="comma-separated users who may set another user's password without the old one"),
    Setting(section="common", key="security.tlsMode", target=SecurityConfig, field="tls_mode",
            help="TLS of the proxy: 0 off, 1 one-way, 2 mutual", check=check_tls_mode),
    Setting(section="tls", key="serverPemPath", target=SecurityConfig, field="server_pem_path",
            help="PEM certificate (chain) of the proxy"),
    Setting(section="tls", key="serverKeyPath", target=SecurityConfig, field="server_key_path",
            help="PEM private key of the proxy"),
    Setting(section="tls", key="caPemPath", target=SecurityConfig, field="ca_pem_path",
            help="PEM CA certificate that signs client certificates (tlsMode 2)"),
    # TLS between the roles (Milvus's names; mutual is Strata's own): common/internaltls.py.
    Setting(section="common", key="security.internaltlsEnabled", target=InternalTlsConfig, field="enabled",
            help="TLS on every gRPC port and channel between the roles (not the proxy's client port)"),
    Setting(section="internaltls", key="serverPemPath", target=InternalTlsConfig, field="server_pem_path",
            help="PEM certificate (chain) every role presents"),
    Setting(section="internaltls", key="serverKeyPath", target=InternalTlsConfig, field="server_key_path",
            help="PEM private key of that certificate"),
    Setting(section="internaltls", key="caPemPath", target=InternalTlsConfig, field="ca_pem_path",
            help="PEM CA certificate the roles check each other's certificate against"),
    Setting(section="internaltls", key="sni", target=InternalTlsConfig, field="sni",
            help="name the roles' certificate must carry (Milvus's internaltls.sni, default localhost)"),
    Setting(section="internaltls", key="mutual", target=InternalTlsConfig, field="mutual",
            help="servers require the caller's certificate too (Strata's own; Milvus is one-way)"),
    # OpenTelemetry tracing (Milvus's names): common/config.py TraceConfig, README "Tracing".
    Setting(section="trace", key="exporter", target=TraceConfig, field="exporter",
            help="where spans go: noop (no tracing), stdout (JSON lines), otlp (trace.otlp.endpoint)",
            check=check_trace_exporter),
    Setting(section="trace", key="sampleFraction", target=TraceConfig, field="sample_fraction",
            help="share of new traces recorded, 0 to 1 (a request with a sampled traceparent always is)",
            check=check_fraction),
    Setting(section="trace", key="otlp.endpoint", target=TraceConfig, field="otlp_endpoint",
            help="HOST:PORT of the OTLP/gRPC collector (exporter otlp)"),
    Setting(section="trace", key="otlp.secure", target=TraceConfig, field="otlp_secure",
            help="TLS to the OTLP collector"),
    Setting(section="jobs", key="spark_master", target=JobsConfig, field="spark_master",
            help="Spark master of compaction and import jobs: local[*], spark://HOST:PORT, k8s://...",
            check=check_spark_master),
    Setting(section="jobs", key="spark_conf", target=JobsConfig, field="spark_conf",
            help='extra Spark settings, "key=value;key=value"'),
    Setting(section="jobs", key="driver_memory", target=JobsConfig, field="driver_memory",
            help="spark-submit --driver-memory"),
    Setting(section="jobs", key="executor_memory", target=JobsConfig, field="executor_memory",
            help="spark-submit --executor-memory (cluster masters)"),
    Setting(section="jobs", key="shuffle_partitions", target=JobsConfig, field="shuffle_partitions",
            help="spark.sql.shuffle.partitions of the jobs", check=check_positive),
    Setting(section="jobs", key="job_timeout_seconds", target=JobsConfig, field="job_timeout_seconds",
            help="a job running longer is killed and fails", check=check_positive),
    Setting(section="jobs", key="work_dir", target=JobsConfig, field="work_dir",
            help="directory of the jobs' work directories (default: DATA_DIR/jobs in standalone, "
                 "else strata-jobs in the system temp directory)"),
    Setting(section="jobs", key="compaction_interval_seconds", target=JobsConfig,
            field="compaction_interval_seconds",
            help="seconds between automatic compaction rounds (0 = manual compact() only)",
            check=check_non_negative),
    Setting(section="jobs", key="compaction_min_age_seconds", target=JobsConfig,
            field="compaction_min_age_seconds",
            help="automatic compaction leaves segments flushed more recently than this alone",
            check=check_non_negative),
    Setting(section="jobs", key="compaction_target_bytes", target=JobsConfig, field="compaction_target_bytes",
            help="size of a compaction output or imported segment", check=check_positive),
    Setting(section="jobs", key="compaction_min_segments", target=JobsConfig, field="compaction_min_segments",
            help="small segments of a vchannel and partition that start a merge", check=check_positive),
    Setting(section="jobs", key="compaction_delete_ratio", target=JobsConfig, field="compaction_delete_ratio",
            help="share of deleted rows that makes a segment be rewritten", check=check_positive),
    Setting(section="jobs", key="l0_trigger_segments", target=JobsConfig, field="l0_trigger_segments",
            help="L0 delete segments of a vchannel that start folding them into its segments",
            check=check_positive),
    Setting(section="jobs", key="compaction_yield_seconds", target=JobsConfig, field="compaction_yield_seconds",
            help="a compaction waits at most this long for loads in progress to finish",
            check=check_non_negative),
)  # fmt: skip

BY_NAME = {s.name: s for s in SETTINGS}
