"""Build a role's config from defaults, ``STRATA_*`` variables, a YAML file and flags.

Precedence, lowest first: dataclass defaults < environment < file < flags.

The file has one section per role plus ``common``; every key is listed in
``SETTINGS`` (``configkeys.py``; and in README.md, "Running as a cluster")::

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
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

import yaml

from common.config import (
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
)
from common.configkeys import BY_NAME, ENV_ALIASES, ENV_CONFIG_FILE, ENV_PREFIX, ROLES, SECTIONS, SETTINGS, Setting

__all__ = [
    "BY_NAME", "ENV_ALIASES", "ENV_CONFIG_FILE", "ENV_PREFIX", "ROLES", "SECTIONS", "SETTINGS", "ConfigError",
    "RoleConfig", "Setting", "Value", "build", "load", "read_env", "read_file", "resolve",
]

RoleConfig = CoordinatorConfig | StreamingNodeConfig | QueryNodeConfig | ProxyConfig


class ConfigError(ValueError):
    """A configuration problem; the message names the key and its source."""


@dataclass(frozen=True, slots=True)
class Value:
    """A raw value and where it came from (``flag --etcd``, ``env STRATA_ETCD``, ``file x.yaml``)."""

    raw: object
    source: str



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
