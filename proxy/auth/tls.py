"""TLS of the proxy's port (Milvus's ``common.security.tlsMode`` and ``tls.*`` keys).

``tlsMode`` 1: the proxy presents ``tls.serverPemPath`` / ``tls.serverKeyPath``; clients check it
against their CA (pymilvus ``secure=True, server_pem_path=...`` or ``ca_pem_path=...``).
``tlsMode`` 2: clients must also present a certificate signed by ``tls.caPemPath``
(pymilvus ``client_pem_path``, ``client_key_path``, ``ca_pem_path``); without one the handshake fails.
The RESTful API's port (``proxy.http.port``) serves HTTPS with the same certificate and rules.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import grpc

from common.config import SecurityConfig


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read {what} {path}: {err.strerror or err}") from err


def server_credentials(security: SecurityConfig) -> grpc.ServerCredentials | None:
    """The credentials of the proxy's port; None with ``tlsMode`` 0. Raises ``ValueError`` for unreadable files."""
    if security.tls_mode == 0:
        return None
    chain = _read(security.server_pem_path, "tls.serverPemPath")
    key = _read(security.server_key_path, "tls.serverKeyPath")
    mutual = security.tls_mode == 2
    ca = _read(security.ca_pem_path, "tls.caPemPath") if mutual else None
    return grpc.ssl_server_credentials([(key, chain)], root_certificates=ca, require_client_auth=mutual)


def http_ssl_context(security: SecurityConfig) -> ssl.SSLContext | None:
    """The RESTful API's TLS: the same certificate, key and client CA as the gRPC port; None with
    ``tlsMode`` 0. Raises ``ValueError`` for unreadable or unusable files."""
    if security.tls_mode == 0:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(security.server_pem_path, security.server_key_path)
        if security.tls_mode == 2:
            context.load_verify_locations(cafile=security.ca_pem_path)
            context.verify_mode = ssl.CERT_REQUIRED
    except (OSError, ssl.SSLError) as err:
        raise ValueError(f"cannot use the proxy's TLS files for HTTPS: {err}") from err
    return context
