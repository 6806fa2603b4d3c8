"""Configuration errors name the key and where the value came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config import CommonConfig, QueryNodeConfig, StreamingNodeConfig, check_storage_uri
from common.configfile import ConfigError, Value, load

ETCD = {"STRATA_COMMON_ETCD": "127.0.0.1:2379"}


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "strata.yaml"
    path.write_text(text)
    return str(path)


def test_unknown_key_in_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "streamingnode:\n  wal_dirr: /wal\n")
    with pytest.raises(ConfigError, match=r"config file .*strata\.yaml: unknown key 'streamingnode\.wal_dirr'"):
        load("streamingnode", flags={}, config_file=path, environ=ETCD)


def test_unknown_section_in_file(tmp_path: Path) -> None:
    path = _file(tmp_path, "datanode:\n  port: 1\n")
    with pytest.raises(ConfigError, match="unknown section 'datanode'"):
        load("proxy", flags={}, config_file=path, environ=ETCD)


def test_unknown_key_in_environment() -> None:
    environ = {**ETCD, "STRATA_COORDINATOR_PCHANNEL": "4"}
    with pytest.raises(ConfigError, match="env STRATA_COORDINATOR_PCHANNEL: unknown key"):
        load("coordinator", flags={}, config_file=None, environ=environ)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("coordinator: {pchannels: four}", r"coordinator\.pchannels \(from config file .*\): expected an integer"),
        ("coordinator: {pchannels: 2.5}", r"coordinator\.pchannels .*expected an integer, got float"),
        ("coordinator: {cluster_name: 12}", r"coordinator\.cluster_name .*expected a string, got int"),
        ("streamingnode: {tick_interval_seconds: fast}", r"tick_interval_seconds .*expected a number"),
        ("streamingnode: {tick_interval_seconds: 0}", r"tick_interval_seconds .*must be positive"),
        ("proxy: {port: 70000}", r"proxy\.port .*out of range"),
        ("common: {etcd: localhost}", r"common\.etcd .*HOST:PORT"),
        ("common: [etcd]", r"section 'common' must be a mapping"),
        ("common: {etcd: [unclosed", r"not valid YAML"),
    ],
)
def test_bad_value_in_file(tmp_path: Path, text: str, message: str) -> None:
    path = _file(tmp_path, text + "\n")
    with pytest.raises(ConfigError, match=message):
        load("coordinator", flags={}, config_file=path, environ=ETCD)


def test_bad_value_in_environment_names_the_variable() -> None:
    environ = {**ETCD, "STRATA_STREAMINGNODE_TICK_INTERVAL_SECONDS": "soon", "STRATA_STREAMINGNODE_WAL_DIR": "/w"}
    with pytest.raises(
        ConfigError, match=r"tick_interval_seconds \(from env STRATA_STREAMINGNODE_TICK_INTERVAL_SECONDS\)"
    ):
        load("streamingnode", flags={}, config_file=None, environ=environ)


def test_bad_value_in_flag_names_the_flag() -> None:
    flags = {"coordinator.port": Value("high", "flag --port")}
    with pytest.raises(ConfigError, match=r"coordinator\.port \(from flag --port\): expected an integer, got 'high'"):
        load("coordinator", flags=flags, config_file=None, environ=ETCD)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load("proxy", flags={}, config_file=str(tmp_path / "nope.yaml"), environ=ETCD)


def test_missing_etcd_says_how_to_set_it() -> None:
    with pytest.raises(ConfigError, match=r"common\.etcd is required: pass --etcd.*STRATA_COMMON_ETCD or STRATA_ETCD"):
        load("querynode", flags={}, config_file=None, environ={})


def test_missing_wal_dir() -> None:
    with pytest.raises(ConfigError, match=r"streamingnode\.wal_dir is required: pass --wal-dir"):
        load("streamingnode", flags={}, config_file=None, environ=ETCD)


def test_bad_value_for_another_role_is_still_refused(tmp_path: Path) -> None:
    # One file serves the cluster: a mistake anywhere in it is caught by whichever role reads it.
    path = _file(tmp_path, "streamingnode: {tick_interval_seconds: never}\n")
    with pytest.raises(ConfigError, match="tick_interval_seconds"):
        load("proxy", flags={}, config_file=path, environ=ETCD)


@pytest.mark.parametrize("uri", ["file:///var/lib/strata", "file://localhost/data", "s3://bucket", "s3://bucket/a/b"])
def test_storage_accepts_file_and_s3(uri: str) -> None:
    check_storage_uri(uri)
    flags = {"querynode.storage": Value(uri, "flag --storage")}
    config = load("querynode", flags=flags, config_file=None, environ=ETCD)
    assert isinstance(config, QueryNodeConfig) and config.storage == uri


@pytest.mark.parametrize(
    "uri", ["http://example.com/x", "file://relative/path", "s3:///no-bucket", "/plain/path", "gs://b"]
)
def test_storage_refuses_other_uris(uri: str) -> None:
    flags = {"streamingnode.storage": Value(uri, "flag --storage")}
    environ = {**ETCD, "STRATA_STREAMINGNODE_WAL_DIR": "/w"}
    with pytest.raises(ConfigError, match=r"streamingnode\.storage \(from flag --storage\)"):
        load("streamingnode", flags=flags, config_file=None, environ=environ)


def test_dataclass_validate_refuses_bad_storage_too() -> None:
    config = StreamingNodeConfig(common=CommonConfig(etcd="h:1"), wal_dir="/w", storage="http://x")
    with pytest.raises(ValueError, match="storage"):
        config.validate()
