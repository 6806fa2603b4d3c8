"""TLS of the proxy's port (Milvus's ``common.security.tlsMode`` and ``tls.*`` keys).

``tlsMode`` 1: the proxy presents ``tls.serverPemPath`` / ``tls.serverKeyPath``; clients check it
against their CA (pymilvus ``secure=True, server_pem_path=...`` or ``ca_pem_path=...``).
``tlsMode`` 2: clients must also present a certificate signed by ``tls.caPemPath``
(pymilvus ``client_pem_path``, ``client_key_path``, ``ca_pem_path``); without one the handshake fails.
"""

from __future__ import annotations

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
