"""Build a role's config from defaults, ``STRATA_*`` variables, a YAML file and flags.

Precedence, lowest first: dataclass defaults < environment < file < flags.

The file has one section per role plus ``common``; every key is listed in
``SETTINGS`` (and in README.md, "Running as a cluster")::

    common: {etcd: "10.0.0.5:2379", etcd_root: strata, host: 127.0.0.1, session_ttl_seconds: 15}
    coordinator: {port: 0, pchannels: 4, cluster_name: strata}
    streamingnode: {port: 0, wal_dir: /var/lib/strata/wal, wal_backend: local,
                    tick_interval_seconds: 0.2, storage: "s3://bucket/strata"}
    # or the WAL on a NATS JetStream cluster, no wal_dir: {wal_backend: nats,
    #   wal_nats_servers: "nats://10.0.0.7:4222,nats://10.0.0.8:4222", wal_nats_replicas: 3, ...}
    querynode: {port: 0, storage: "s3://bucket/strata"}
    proxy: {port: 19530, server_max_recv_size: 67108864, max_topk: 16384}   # limits: README.md
    jobs: {spark_master: "local[*]", compaction_interval_seconds: 60}   # read by the coordinator
    # Milvus's security keys, nested as in milvus.yaml (README.md, "Security"):
    # common: {security: {authorizationEnabled: true, tlsMode: 1}}
    # tls: {serverPemPath: /certs/server.pem, serverKeyPath: /certs/server.key, caPemPath: /certs/ca.pem}
    # TLS between the roles: common: {security: {internaltlsEnabled: true}}
    # internaltls: {serverPemPath: /certs/internal.pem, serverKeyPath: /certs/internal.key,
    #               caPemPath: /certs/ca.pem, sni: localhost, mutual: false}

Each key is also ``STRATA_<SECTION>_<KEY>`` in the environment
(``STRATA_STREAMINGNODE_WAL_DIR``); ``STRATA_ETCD`` and ``STRATA_ETCD_ROOT``
are short forms of the ``common`` ones (the long form wins if both are set),
and ``STRATA_CONFIG`` names the file when ``--config`` is not given.

Values are converted to the type of the dataclass field they fill. Any
problem -- unknown section or key, a value of the wrong type, a required key
missing -- raises ``ConfigError`` naming the key and where the value came from;
the CLI turns it into exit status 2 before anything starts.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

import yaml

from common.config import (
    DEFAULT_METRICS_PORT,
    CommonConfig,
    CoordinatorConfig,
    InternalTlsConfig,
    JobsConfig,
    ProxyConfig,
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

RoleConfig = CoordinatorConfig | StreamingNodeConfig | QueryNodeConfig | ProxyConfig


class ConfigError(ValueError):
    """A configuration problem; the message names the key and its source."""


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


@dataclass(frozen=True, slots=True)
class Value:
    """A raw value and where it came from (``flag --etcd``, ``env STRATA_ETCD``, ``file x.yaml``)."""

    raw: object
    source: str


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
_ROLE_CLASSES: dict[str, type] = {
    "coordinator": CoordinatorConfig,
    "streamingnode": StreamingNodeConfig,
    "querynode": QueryNodeConfig,
    "proxy": ProxyConfig,
}


def _field_type(setting: Setting) -> Any:
    return typing.get_type_hints(setting.target)[setting.field]


def _convert(setting: Setting, value: Value) -> object:
    """Convert ``value`` to the type of the field ``setting`` fills, then run its check."""
    where = f"{setting.name} (from {value.source})"
    tp = _field_type(setting)
    raw = value.raw
    optional = isinstance(tp, types.UnionType) and type(None) in typing.get_args(tp)
    if optional:
        (tp,) = [a for a in typing.get_args(tp) if a is not type(None)]
        if raw is None or raw == "":
            return None
    try:
        converted = _as_type(tp, raw)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from err
    if setting.check is not None:
        try:
            setting.check(converted)
        except ValueError as err:
            raise ConfigError(f"{where}: {err}") from err
    return converted


def _as_type(tp: Any, raw: object) -> object:
    # Strings come from flags and the environment; the file gives YAML scalars, taken only if they already fit.
    if tp is int:
        if isinstance(raw, str):
            try:
                return int(raw.strip())
            except ValueError:
                raise ValueError(f"expected an integer, got {raw!r}") from None
        if isinstance(raw, int) and not isinstance(raw, bool):
            return raw
        raise TypeError(f"expected an integer, got {type(raw).__name__} {raw!r}")
    if tp is float:
        if isinstance(raw, str):
            try:
                return float(raw.strip())
            except ValueError:
                raise ValueError(f"expected a number, got {raw!r}") from None
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            return float(raw)
        raise TypeError(f"expected a number, got {type(raw).__name__} {raw!r}")
    if tp is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _BOOLS:
            return _BOOLS[raw.strip().lower()]
        raise ValueError(f"expected true or false, got {raw!r}")
    if tp is str:
        if isinstance(raw, str):
            return raw
        raise TypeError(f"expected a string, got {type(raw).__name__} {raw!r} (quote it in YAML)")
    raise TypeError(f"unsupported config field type {tp!r}")  # a programming error in SETTINGS


_BOOLS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


def _flatten(body: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, object]]:
    """Keys of a section, nested mappings joined by dots (``security: {tlsMode: 1}``: ``security.tlsMode``)."""
    for key, raw in body.items():
        name = f"{prefix}{key}"
        if isinstance(raw, dict):
            yield from _flatten(raw, f"{name}.")
        else:
            yield name, raw


def read_file(path: str) -> dict[str, Value]:
    """Parse the YAML file into ``{"section.key": Value}``; unknown sections or keys are errors."""
    source = f"config file {path}"
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except OSError as err:
        raise ConfigError(f"{source}: cannot read: {err.strerror or err}") from err
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML: {err}") from err
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: expected a mapping of sections ({', '.join(SECTIONS)})")
    out: dict[str, Value] = {}
    for section, body in doc.items():
        if section not in SECTIONS:
            raise ConfigError(f"{source}: unknown section {section!r} (known: {', '.join(SECTIONS)})")
        if body is None:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{source}: section {section!r} must be a mapping of keys")
        for key, raw in _flatten(body):
            name = f"{section}.{key}"
            if name not in BY_NAME:
                known = ", ".join(s.key for s in SETTINGS if s.section == section)
                raise ConfigError(f"{source}: unknown key {name!r} (known in {section}: {known})")
            out[name] = Value(raw, source)
    return out


def read_env(environ: Mapping[str, str]) -> dict[str, Value]:
    """Collect ``STRATA_<SECTION>_<KEY>`` and the short aliases; unknown keys of a known section are errors."""
    out: dict[str, Value] = {}
    for var, name in ENV_ALIASES.items():
        if var in environ:
            out[name] = Value(environ[var], f"env {var}")
    by_env = {s.env: s for s in SETTINGS}
    for var in sorted(environ):
        setting = by_env.get(var)
        if setting is not None:
            out[setting.name] = Value(environ[var], f"env {var}")
            continue
        for section in SECTIONS:
            if var.startswith(f"{ENV_PREFIX}{section.upper()}_"):
                known = ", ".join(s.env for s in SETTINGS if s.section == section)
                raise ConfigError(f"env {var}: unknown key (known: {known})")
    return out


def resolve(*, flags: Mapping[str, Value], config_file: str | None, environ: Mapping[str, str]) -> dict[str, object]:
    """Merge the layers and convert every value given: ``{"section.key": value}``.

    Every key present is converted and checked, not only the role's own, so a
    shared cluster file with a mistake is refused by whichever role reads it first.
    """
    for name in flags:
        if name not in BY_NAME:
            raise ConfigError(f"unknown key {name!r}")  # a programming error in the CLI's flag table
    merged: dict[str, Value] = {}
    merged.update(read_env(environ))
    if config_file is not None:
        merged.update(read_file(config_file))
    merged.update(flags)
    return {name: _convert(BY_NAME[name], value) for name, value in merged.items()}


def _kwargs(cls: type, sections: tuple[str, ...], values: Mapping[str, object]) -> dict[str, Any]:
    """Keyword arguments for ``cls`` from the keys of ``sections``; a required field left unset is an error."""
    kwargs: dict[str, Any] = {}
    for setting in SETTINGS:
        if setting.target is not cls or setting.section not in sections:
            continue
        if setting.name in values:
            kwargs[setting.field] = values[setting.name]
        elif setting.default is not None:
            kwargs[setting.field] = setting.default
    given_or_default = {f.name: kwargs.get(f.name, f.default) for f in fields(cls)}
    for f in fields(cls):
        if f.name in kwargs or f.name in ("common", "jobs", "limits", "proxy_limits", "security", "http", "proxy_http",
                                          "internal_tls", "trace"):
            continue
        field_setting = next((s for s in SETTINGS if s.target is cls and s.field == f.name), None)
        required = f.default is MISSING and f.default_factory is MISSING
        if field_setting is not None and field_setting.required_if is not None:
            required = field_setting.required_if(given_or_default)
        if required:
            assert field_setting is not None, f"required field {cls.__name__}.{f.name} has no setting"
            setting = field_setting
            flag = "--" + setting.key.replace("_", "-")
            env = " or ".join([setting.env, *(var for var, name in ENV_ALIASES.items() if name == setting.name)])
            why = f" ({setting.required_why})" if setting.required_why else ""
            raise ConfigError(
                f"{setting.name} is required: pass {flag}, set {setting.key} in the {setting.section} "
                f"section of the config file, or set {env}{why}"
            )
    return kwargs


def build(role: str, values: Mapping[str, object]) -> RoleConfig:
    """Build and validate the config of ``role`` from resolved values."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    security = SecurityConfig(**_kwargs(SecurityConfig, ("common", "tls"), values))
    internal_tls = InternalTlsConfig(**_kwargs(InternalTlsConfig, ("common", "internaltls"), values))
    trace = TraceConfig(**_kwargs(TraceConfig, ("trace",), values))
    common = CommonConfig(**_kwargs(CommonConfig, ("common", role), values), security=security,
                          internal_tls=internal_tls, trace=trace)
    cls = _ROLE_CLASSES[role]
    extra: dict[str, Any] = {}
    if cls is CoordinatorConfig:
        extra["jobs"] = JobsConfig(**_kwargs(JobsConfig, ("jobs",), values))
    limits = ProxyLimits(**_kwargs(ProxyLimits, ("proxy",), values))
    http = ProxyHttpConfig(**_kwargs(ProxyHttpConfig, ("proxy",), values))
    if cls is ProxyConfig:
        extra["limits"] = limits
        extra["http"] = http
    if cls is QueryNodeConfig:
        extra["proxy_limits"] = limits  # for the proxy a standalone node serves
        extra["proxy_http"] = http
    config: RoleConfig = cls(common=common, **_kwargs(cls, (role,), values), **extra)
    try:
        config.validate()
    except ValueError as err:
        raise ConfigError(f"invalid {role} configuration: {err}") from err
    return config


def load(role: str, *, flags: Mapping[str, Value], config_file: str | None, environ: Mapping[str, str]) -> RoleConfig:
    """Resolve every layer and build the config of ``role``; raises ``ConfigError``."""
    return build(role, resolve(flags=flags, config_file=config_file, environ=environ))
