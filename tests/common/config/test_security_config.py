"""Milvus's security keys: nested YAML, STRATA_ variables, and refusals of bad combinations."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config import ProxyConfig
from common.configfile import ConfigError, load


def test_security_keys_from_nested_yaml_and_env(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "common: {etcd: '127.0.0.1:2379', security: {authorizationEnabled: true, tlsMode: 2}}\n"
        "tls: {serverPemPath: /s.pem, serverKeyPath: /s.key, caPemPath: /ca.pem}\n"
    )
    config = load("proxy", flags={}, config_file=str(f), environ={"STRATA_COMMON_SECURITY_DEFAULTROOTPASSWORD": "pw-1234"})
    assert isinstance(config, ProxyConfig)
    sec = config.common.security
    assert (sec.authorization_enabled, sec.tls_mode, sec.ca_pem_path) == (True, 2, "/ca.pem")
    assert sec.default_root_password == "pw-1234"
    assert "pw-1234" not in repr(config)  # never in a log line that prints the config


def test_defaults_are_milvus_defaults() -> None:
    config = load("proxy", flags={}, config_file=None, environ={"STRATA_ETCD": "127.0.0.1:2379"})
    sec = config.common.security
    assert (sec.authorization_enabled, sec.tls_mode, sec.default_root_password) == (False, 0, "Milvus")


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"STRATA_COMMON_SECURITY_TLSMODE": "1"}, "tls.serverPemPath"),
        ({"STRATA_COMMON_SECURITY_TLSMODE": "2", "STRATA_TLS_SERVERPEMPATH": "/a", "STRATA_TLS_SERVERKEYPATH": "/b"},
         "tls.caPemPath"),
        ({"STRATA_COMMON_SECURITY_TLSMODE": "3"}, "tlsMode"),
        ({"STRATA_COMMON_SECURITY_AUTHORIZATIONENABLED": "maybe"}, "true or false"),
    ],
)
def test_bad_security_settings_are_refused(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load("proxy", flags={}, config_file=None, environ={"STRATA_ETCD": "127.0.0.1:2379", **env})


def test_root_password_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "root-password"
    secret.write_text("from-a-secret\n")
    env = {"STRATA_ETCD": "127.0.0.1:2379", "STRATA_COMMON_SECURITY_DEFAULTROOTPASSWORDFILE": str(secret)}
    assert load("coordinator", flags={}, config_file=None, environ=env).common.security.root_password() == "from-a-secret"
    secret.write_text("")
    with pytest.raises(ValueError, match="empty"):
        load("coordinator", flags={}, config_file=None, environ=env).common.security.root_password()


def test_super_users_from_yaml_and_env(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("common: {etcd: '127.0.0.1:2379', security: {superUsers: ' sue, ,tom '}}\n")
    sec = load("proxy", flags={}, config_file=str(f), environ={}).common.security
    assert sec.super_user_names() == frozenset({"sue", "tom"})
    f.write_text("common:\n  etcd: '127.0.0.1:2379'\n  security:\n    superUsers:\n")  # as milvus.yaml ships it
    assert load("proxy", flags={}, config_file=str(f), environ={}).common.security.super_user_names() == frozenset()
    env = {"STRATA_ETCD": "127.0.0.1:2379", "STRATA_COMMON_SECURITY_SUPERUSERS": "sue"}
    assert load("proxy", flags={}, config_file=None, environ=env).common.security.super_user_names() == {"sue"}
