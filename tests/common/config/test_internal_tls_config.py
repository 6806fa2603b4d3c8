"""Milvus's internal TLS keys (``common.security.internaltlsEnabled``, ``internaltls.*``) in every role's config."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.configfile import ROLES, ConfigError, load
from tests.common.config.test_cli import _run

ETCD = {"STRATA_ETCD": "127.0.0.1:2379"}


def test_off_by_default() -> None:
    tls = load("querynode", flags={}, config_file=None, environ={**ETCD, "STRATA_QUERYNODE_STORAGE": "file:///s"})
    assert (tls.common.internal_tls.enabled, tls.common.internal_tls.sni) == (False, "localhost")


@pytest.mark.parametrize("role", ROLES)
def test_keys_from_nested_yaml_reach_every_role(tmp_path: Path, role: str) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "common: {etcd: '127.0.0.1:2379', security: {internaltlsEnabled: true}}\n"
        "internaltls: {serverPemPath: /r.pem, serverKeyPath: /r.key, caPemPath: /ca.pem, sni: strata.internal,"
        " mutual: true}\n"
        "streamingnode: {wal_dir: /w, storage: 'file:///s'}\nquerynode: {storage: 'file:///s'}\n"
    )
    tls = load(role, flags={}, config_file=str(f), environ={}).common.internal_tls
    assert (tls.enabled, tls.server_pem_path, tls.ca_pem_path, tls.sni, tls.mutual) == (
        True, "/r.pem", "/ca.pem", "strata.internal", True)
    assert "/r.key" not in repr(tls)


def test_environment_names() -> None:
    env = {**ETCD, "STRATA_COMMON_SECURITY_INTERNALTLSENABLED": "true", "STRATA_INTERNALTLS_SERVERPEMPATH": "/r.pem",
           "STRATA_INTERNALTLS_SERVERKEYPATH": "/r.key", "STRATA_INTERNALTLS_CAPEMPATH": "/ca.pem"}
    tls = load("coordinator", flags={}, config_file=None, environ=env).common.internal_tls
    assert (tls.enabled, tls.server_key_path, tls.mutual) == (True, "/r.key", False)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"STRATA_COMMON_SECURITY_INTERNALTLSENABLED": "true"}, "internaltls.serverPemPath"),
        ({"STRATA_COMMON_SECURITY_INTERNALTLSENABLED": "true", "STRATA_INTERNALTLS_SERVERPEMPATH": "/a",
          "STRATA_INTERNALTLS_SERVERKEYPATH": "/b"}, "internaltls.caPemPath"),
        ({"STRATA_INTERNALTLS_MUTUAL": "sometimes"}, "true or false"),
        ({"STRATA_INTERNALTLS_CLIENTPEMPATH": "/c.pem"}, "unknown key"),
    ],
)
def test_bad_settings_are_refused(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace(".", r"\.")):
        load("coordinator", flags={}, config_file=None, environ={**ETCD, **env})


def test_unreadable_certificate_stops_the_role_before_it_starts(tmp_path: Path) -> None:
    env = {**ETCD, "STRATA_COMMON_SECURITY_INTERNALTLSENABLED": "true",
           "STRATA_INTERNALTLS_SERVERPEMPATH": str(tmp_path / "missing.pem"),
           "STRATA_INTERNALTLS_SERVERKEYPATH": str(tmp_path / "missing.key"),
           "STRATA_INTERNALTLS_CAPEMPATH": str(tmp_path / "ca.pem")}
    result = _run("streamingnode", "--wal-dir", str(tmp_path / "w"), "--storage", (tmp_path / "s").as_uri(), env=env)
    assert result.returncode == 2, result.stderr
    assert "internaltls.serverPemPath" in result.stderr
    assert not (tmp_path / "w").exists()
