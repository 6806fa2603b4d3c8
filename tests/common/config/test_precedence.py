"""Where each value comes from: defaults < STRATA_* environment < config file < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config import CoordinatorConfig, ProxyConfig, QueryNodeConfig, StreamingNodeConfig
from common.configfile import Value, load

ETCD = {"STRATA_COMMON_ETCD": "127.0.0.1:2379"}
# Required of the streaming and query nodes.
STORAGE = {"STRATA_STREAMINGNODE_STORAGE": "file:///data", "STRATA_QUERYNODE_STORAGE": "file:///data"}


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "strata.yaml"
    path.write_text(text)
    return str(path)


# (role, section.key, env var, flag, value attribute path, default, env value, file value, flag value)
CASES = [
    pytest.param(
        "coordinator", "coordinator.pchannels", "STRATA_COORDINATOR_PCHANNELS", "--pchannels",
        "pchannel_count", 4, ("6", 6), ("7", 7), ("8", 8), id="int-pchannels",
    ),
    pytest.param(
        "proxy", "proxy.port", "STRATA_PROXY_PORT", "--port",
        "common.port", 19530, ("19531", 19531), ("19532", 19532), ("19533", 19533), id="int-proxy-port",
    ),
    pytest.param(
        "streamingnode", "streamingnode.tick_interval_seconds", "STRATA_STREAMINGNODE_TICK_INTERVAL_SECONDS",
        "--tick-interval", "tick_interval_seconds", 0.2, ("0.5", 0.5), ("1", 1.0), ("0.05", 0.05), id="float-tick",
    ),
    pytest.param(
        "coordinator", "coordinator.cluster_name", "STRATA_COORDINATOR_CLUSTER_NAME", "--cluster-name",
        "cluster_name", "strata", ("from-env", "from-env"), ("from-file", "from-file"), ("from-flag", "from-flag"),
        id="str-cluster-name",
    ),
    pytest.param(
        "querynode", "common.etcd_root", "STRATA_COMMON_ETCD_ROOT", "--etcd-root",
        "common.etcd_root", "strata", ("env-root", "env-root"), ("file-root", "file-root"),
        ("flag-root", "flag-root"), id="str-etcd-root",
    ),
    pytest.param(
        "coordinator", "coordinator.storage", "STRATA_COORDINATOR_STORAGE", "--storage",
        "storage", None, ("file:///env", "file:///env"), ("s3://file-bucket/p", "s3://file-bucket/p"),
        ("file:///flag", "file:///flag"), id="optional-str-storage",
    ),
]  # fmt: skip


def _get(config: object, path: str) -> object:
    for part in path.split("."):
        config = getattr(config, part)
    return config


@pytest.mark.parametrize(("role", "key", "env_var", "flag", "attr", "default", "env", "file", "flag_value"), CASES)
def test_each_layer_overrides_the_one_below(
    tmp_path: Path,
    role: str,
    key: str,
    env_var: str,
    flag: str,
    attr: str,
    default: object,
    env: tuple[str, object],
    file: tuple[str, object],
    flag_value: tuple[str, object],
) -> None:
    base_env = {**ETCD, **STORAGE, "STRATA_STREAMINGNODE_WAL_DIR": str(tmp_path / "wal")}
    section, name = key.split(".")
    config_file = _file(tmp_path, f"{section}:\n  {name}: {file[0]}\n")
    flags = {key: Value(flag_value[0], f"flag {flag}")}

    assert _get(load(role, flags={}, config_file=None, environ=base_env), attr) == default
    with_env = {**base_env, env_var: env[0]}
    assert _get(load(role, flags={}, config_file=None, environ=with_env), attr) == env[1]
    assert _get(load(role, flags={}, config_file=config_file, environ=with_env), attr) == file[1]
    assert _get(load(role, flags=flags, config_file=config_file, environ=with_env), attr) == flag_value[1]


def test_types_follow_the_dataclass_fields(tmp_path: Path) -> None:
    config_file = _file(
        tmp_path,
        "common: {etcd: '10.0.0.5:2379', session_ttl_seconds: 30}\n"
        "streamingnode: {wal_dir: /var/wal, tick_interval_seconds: 2, storage: 's3://bucket/prefix', port: 0}\n",
    )
    config = load("streamingnode", flags={}, config_file=config_file, environ={})
    assert isinstance(config, StreamingNodeConfig)
    assert config.common.etcd == "10.0.0.5:2379"
    assert config.common.session_ttl_seconds == 30
    assert config.tick_interval_seconds == 2.0 and isinstance(config.tick_interval_seconds, float)
    assert config.storage == "s3://bucket/prefix"
    assert config.wal_dir == "/var/wal"


def test_one_file_serves_every_role(tmp_path: Path) -> None:
    config_file = _file(
        tmp_path,
        "common: {etcd: 'etcd:2379', etcd_root: prod}\n"
        "coordinator: {pchannels: 16, port: 19600}\n"
        "streamingnode: {wal_dir: /wal, port: 19601, storage: 'file:///data/segments'}\n"
        "querynode: {port: 19602, storage: 'file:///data/segments'}\n"
        "proxy: {port: 19530}\n",
    )
    coord = load("coordinator", flags={}, config_file=config_file, environ={})
    node = load("streamingnode", flags={}, config_file=config_file, environ={})
    query = load("querynode", flags={}, config_file=config_file, environ={})
    proxy = load("proxy", flags={}, config_file=config_file, environ={})
    assert isinstance(coord, CoordinatorConfig) and coord.pchannel_count == 16 and coord.common.port == 19600
    assert isinstance(node, StreamingNodeConfig) and node.common.port == 19601 and node.storage == "file:///data/segments"
    assert isinstance(query, QueryNodeConfig) and query.storage == "file:///data/segments"
    assert isinstance(proxy, ProxyConfig) and proxy.common.port == 19530
    assert {c.common.etcd_root for c in (coord, node, query, proxy)} == {"prod"}


def test_short_env_alias_and_long_form_wins() -> None:
    config = load("querynode", flags={}, config_file=None, environ={"STRATA_ETCD": "a:1", **STORAGE})
    assert config.common.etcd == "a:1"
    both = {"STRATA_ETCD": "a:1", "STRATA_COMMON_ETCD": "b:2", **STORAGE}
    assert load("querynode", flags={}, config_file=None, environ=both).common.etcd == "b:2"


def test_empty_file_and_unrelated_strata_variables_are_fine(tmp_path: Path) -> None:
    environ = {**ETCD, "STRATA_ETCD_BINARY": "/usr/bin/etcd", "STRATA_LOG_LEVEL": "debug"}
    config = load("proxy", flags={}, config_file=_file(tmp_path, ""), environ=environ)
    assert config.common.port == 19530
