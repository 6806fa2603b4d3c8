"""Internal TLS (``common/internaltls.py``) on a real grpc.aio server and channels on loopback.

Certificates are made at test time. Each case installs the process's internal TLS, starts a server
with ``common.grpcutil.start_server`` and dials it with ``internal_channel`` (what every role's
server and channel use), then puts plaintext back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from common import internaltls
from common.config import InternalTlsConfig
from common.grpcutil import Health, internal_channel, start_server
from tests.e2e.tlscerts import make_ca, make_leaf

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("internal-certs")
    ca = make_ca(d, "ca")
    other_ca = make_ca(d, "other-ca")
    role = make_leaf(d, "role", ca, server=True, client=True)
    stranger = make_leaf(d, "stranger", other_ca, server=True, client=True)
    return {"ca": ca[0].cert, "other_ca": other_ca[0].cert, "role": role.cert, "role_key": role.key,
            "stranger": stranger.cert, "stranger_key": stranger.key}


def _config(certs: dict[str, Path], *, mutual: bool, ca: str = "ca") -> InternalTlsConfig:
    return InternalTlsConfig(enabled=True, server_pem_path=str(certs["role"]), server_key_path=str(certs["role_key"]),
                             ca_pem_path=str(certs[ca]), mutual=mutual)


@pytest.fixture()
def plaintext_after() -> Iterator[None]:
    """Whatever a test installs, the next test of this worker starts with plaintext."""
    try:
        yield
    finally:
        internaltls.install(InternalTlsConfig())


async def _check(channel: grpc.aio.Channel) -> int:
    try:
        answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
        return int(answer.status)
    finally:
        await channel.close()


@pytest.fixture()
async def tls_server(request: pytest.FixtureRequest, certs: dict[str, Path],
                     plaintext_after: None) -> AsyncIterator[tuple[str, bool]]:
    mutual: bool = request.param
    internaltls.install(_config(certs, mutual=mutual))
    health = Health()
    server, port = await start_server(lambda s: None, health=health)
    await health.serving()
    try:
        yield f"127.0.0.1:{port}", mutual
    finally:
        await server.stop(None)


@pytest.mark.parametrize("tls_server", [False, True], ids=["one-way", "mutual"], indirect=True)
async def test_internal_channel_reaches_internal_server(tls_server: tuple[str, bool]) -> None:
    address, _ = tls_server
    assert await _check(internal_channel(address)) == health_pb2.HealthCheckResponse.SERVING


@pytest.mark.parametrize("tls_server", [False, True], ids=["one-way", "mutual"], indirect=True)
async def test_plaintext_client_is_refused(tls_server: tuple[str, bool]) -> None:
    address, _ = tls_server
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _check(grpc.aio.insecure_channel(address))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("tls_server", [False, True], ids=["one-way", "mutual"], indirect=True)
async def test_client_trusting_another_ca_is_refused(tls_server: tuple[str, bool], certs: dict[str, Path]) -> None:
    address, _ = tls_server
    creds = grpc.ssl_channel_credentials(root_certificates=certs["other_ca"].read_bytes())
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _check(grpc.aio.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", "localhost")]))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize("tls_server", [False, True], ids=["one-way", "mutual"], indirect=True)
async def test_client_certificate_is_required_in_mutual_mode_only(tls_server: tuple[str, bool],
                                                                  certs: dict[str, Path]) -> None:
    address, mutual = tls_server
    options = [("grpc.ssl_target_name_override", "localhost")]
    no_cert = grpc.ssl_channel_credentials(root_certificates=certs["ca"].read_bytes())
    stranger = grpc.ssl_channel_credentials(root_certificates=certs["ca"].read_bytes(),
                                            private_key=certs["stranger_key"].read_bytes(),
                                            certificate_chain=certs["stranger"].read_bytes())
    if not mutual:
        assert await _check(grpc.aio.secure_channel(address, no_cert, options=options)) == \
            health_pb2.HealthCheckResponse.SERVING
        return
    for creds in (no_cert, stranger):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _check(grpc.aio.secure_channel(address, creds, options=options))
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_wrong_sni_is_refused(certs: dict[str, Path], plaintext_after: None) -> None:
    internaltls.install(_config(certs, mutual=False))
    server, port = await start_server(lambda s: None, health=Health())
    try:
        internaltls.install(replace(_config(certs, mutual=False), sni="elsewhere.example"))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _check(internal_channel(f"127.0.0.1:{port}"))
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await server.stop(None)


async def test_clients_port_stays_plaintext(certs: dict[str, Path], plaintext_after: None) -> None:
    """A server started with ``internal=False`` (the proxy's client port) ignores internal TLS."""
    internaltls.install(_config(certs, mutual=True))
    health = Health()
    server, port = await start_server(lambda s: None, health=health, internal=False)
    await health.serving()
    try:
        assert await _check(grpc.aio.insecure_channel(f"127.0.0.1:{port}")) == health_pb2.HealthCheckResponse.SERVING
    finally:
        await server.stop(None)


def test_unreadable_certificate_is_refused_naming_the_key(certs: dict[str, Path], tmp_path: Path,
                                                          plaintext_after: None) -> None:
    config = replace(_config(certs, mutual=False), ca_pem_path=str(tmp_path / "nope.pem"))
    with pytest.raises(ValueError, match="internaltls.caPemPath"):
        internaltls.install(config)


def test_disabled_installs_plaintext(certs: dict[str, Path], plaintext_after: None) -> None:
    assert internaltls.install(_config(certs, mutual=False)) is not None
    assert internaltls.install(InternalTlsConfig()) is None
    assert internaltls.installed() is None
