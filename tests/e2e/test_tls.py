"""TLS on the proxy's port: one-way (tlsMode 1) and mutual (tlsMode 2), with pymilvus's options;
the RESTful API's port serves HTTPS with the same certificates and rules.

Certificates are made at test time (``tests/e2e/tlscerts.py``). Each case is a real standalone
with Milvus's settings given as ``STRATA_`` variables; pymilvus connects with ``secure=True``
and ``server_pem_path`` / ``ca_pem_path`` / ``client_pem_path`` / ``client_key_path``.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymilvus import MilvusClient
from pymilvus.exceptions import MilvusException

from tests.e2e.tlscerts import make_ca, make_leaf
from tests.harness import Standalone, dump_logs_on_failure

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("certs")
    ca = make_ca(d, "ca")
    other_ca = make_ca(d, "other-ca")
    server = make_leaf(d, "server", ca, server=True)
    client = make_leaf(d, "client", ca, server=False)
    stranger = make_leaf(d, "stranger", other_ca, server=False)
    return {"ca": ca[0].cert, "other_ca": other_ca[0].cert, "server": server.cert, "server_key": server.key,
            "client": client.cert, "client_key": client.key, "stranger": stranger.cert, "stranger_key": stranger.key}


def _standalone(tmp: Path, certs: dict[str, Path], mode: int) -> Standalone:
    env = {"STRATA_COMMON_SECURITY_TLSMODE": str(mode), "STRATA_TLS_SERVERPEMPATH": str(certs["server"]),
           "STRATA_TLS_SERVERKEYPATH": str(certs["server_key"]), "STRATA_TLS_CAPEMPATH": str(certs["ca"]),
           "STRATA_COMMON_SECURITY_AUTHORIZATIONENABLED": "true"}
    return Standalone(tmp / "data", env=env)


@pytest.fixture(scope="module", params=[1, 2], ids=["one-way", "mutual"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           certs: dict[str, Path]) -> Iterator[tuple[Standalone, int]]:
    s = _standalone(tmp_path_factory.mktemp(f"tls{request.param}"), certs, request.param)
    s.start()
    try:
        with dump_logs_on_failure(s):
            yield s, request.param
    finally:
        try:
            s.stop()
        finally:
            s.kill()


def _connect(s: Standalone, scheme: str = "https", **kwargs: Any) -> MilvusClient:
    # dedicated: pymilvus would otherwise share one connection per address and token between clients.
    return MilvusClient(f"{scheme}://127.0.0.1:{s.port}", token="root:Milvus", timeout=5, dedicated=True, **kwargs)


def _trust(certs: dict[str, Path], mode: int, ca: str = "ca") -> dict[str, str]:
    """pymilvus's options: one-way TLS takes the trusted root as ``server_pem_path``; mutual TLS takes
    it as ``ca_pem_path``, with the client's certificate and key."""
    if mode == 1:
        return {"server_pem_path": str(certs[ca])}
    return {"ca_pem_path": str(certs[ca]), "client_pem_path": str(certs["client"]),
            "client_key_path": str(certs["client_key"])}


def test_right_certificates_work(server: tuple[Standalone, int], certs: dict[str, Path]) -> None:
    s, mode = server
    client = _connect(s, secure=True, **_trust(certs, mode))
    client.create_collection(f"tls_{mode}", dimension=4)
    client.insert(f"tls_{mode}", [{"id": 1, "vector": [0.1] * 4}])
    assert client.query(f"tls_{mode}", filter="id >= 0", consistency_level="Strong")[0]["id"] == 1
    client.close()


def test_plaintext_client_is_refused(server: tuple[Standalone, int]) -> None:
    s, _ = server
    with pytest.raises(MilvusException):
        _connect(s, scheme="http")


def test_client_trusting_another_ca_is_refused(server: tuple[Standalone, int], certs: dict[str, Path]) -> None:
    s, mode = server
    with pytest.raises(MilvusException):
        _connect(s, secure=True, **_trust(certs, mode, ca="other_ca"))


def test_client_certificates_are_required_in_mutual_tls_only(server: tuple[Standalone, int], certs: dict[str, Path]) -> None:
    s, mode = server
    # The client trusts the server (its CA as root) and shows no certificate of its own.
    if mode == 1:
        _connect(s, secure=True, server_pem_path=str(certs["ca"])).close()
        return
    with pytest.raises(MilvusException):
        _connect(s, secure=True, server_pem_path=str(certs["ca"]))
    # A certificate from another CA is no better.
    with pytest.raises(MilvusException):
        _connect(s, secure=True, ca_pem_path=str(certs["ca"]), client_pem_path=str(certs["stranger"]),
                 client_key_path=str(certs["stranger_key"]))


def _rest(s: Standalone, scheme: str, context: ssl.SSLContext | None = None) -> dict[str, Any]:
    request = urllib.request.Request(f"{scheme}://127.0.0.1:{s.http_port}/v2/vectordb/collections/list", data=b"{}",
                                     method="POST", headers={"Content-Type": "application/json",
                                                             "Authorization": "Bearer root:Milvus"})
    with urllib.request.urlopen(request, timeout=10, context=context) as resp:
        answer: dict[str, Any] = json.loads(resp.read())
        return answer


def test_rest_port_serves_https_with_the_same_certificates(server: tuple[Standalone, int],
                                                           certs: dict[str, Path]) -> None:
    s, mode = server
    trusting = ssl.create_default_context(cafile=str(certs["ca"]))
    member = ssl.create_default_context(cafile=str(certs["ca"]))
    member.load_cert_chain(str(certs["client"]), str(certs["client_key"]))
    assert _rest(s, "https", member)["code"] == 0
    with pytest.raises((OSError, http.client.HTTPException)):
        _rest(s, "http")  # plain HTTP to the TLS port
    with pytest.raises(OSError):
        _rest(s, "https", ssl.create_default_context(cafile=str(certs["other_ca"])))
    if mode == 1:
        assert _rest(s, "https", trusting)["code"] == 0
        return
    with pytest.raises((OSError, http.client.HTTPException)):
        _rest(s, "https", trusting)  # mutual TLS: no client certificate
