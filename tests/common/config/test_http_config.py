"""``proxy.http.*``: the RESTful API's switch and port, for the proxy and the standalone node's proxy."""

from __future__ import annotations

from pathlib import Path

import pytest

from common.config import ProxyConfig, QueryNodeConfig
from common.configfile import ConfigError, load

ETCD = {"STRATA_COMMON_ETCD": "127.0.0.1:2379"}
STORAGE = {"STRATA_QUERYNODE_STORAGE": "file:///data"}


def test_defaults_serve_on_19531() -> None:
    proxy = load("proxy", flags={}, config_file=None, environ=ETCD)
    assert isinstance(proxy, ProxyConfig) and proxy.http.enabled and proxy.http.port == 19531
    node = load("querynode", flags={}, config_file=None, environ={**ETCD, **STORAGE})
    assert isinstance(node, QueryNodeConfig) and node.proxy_http.port == 19531


def test_file_and_environment(tmp_path: Path) -> None:
    path = tmp_path / "strata.yaml"
    path.write_text("proxy: {http: {enabled: false, port: 8080}}\n")
    proxy = load("proxy", flags={}, config_file=str(path), environ=ETCD)
    assert isinstance(proxy, ProxyConfig) and (proxy.http.enabled, proxy.http.port) == (False, 8080)
    env = {**ETCD, **STORAGE, "STRATA_PROXY_HTTP_PORT": "0", "STRATA_PROXY_HTTP_ENABLED": "true"}
    node = load("querynode", flags={}, config_file=None, environ=env)
    assert isinstance(node, QueryNodeConfig) and (node.proxy_http.enabled, node.proxy_http.port) == (True, 0)


def test_a_bad_port_is_refused_with_its_key() -> None:
    with pytest.raises(ConfigError, match="proxy.http.port"):
        load("proxy", flags={}, config_file=None, environ={**ETCD, "STRATA_PROXY_HTTP_PORT": "70000"})
