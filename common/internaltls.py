"""TLS of the gRPC traffic between the roles (Milvus's ``common.security.internaltlsEnabled``).

One-way (Milvus's internal TLS): every role's server presents ``internaltls.serverPemPath`` /
``serverKeyPath``; every channel from one role to another checks it against ``internaltls.caPemPath``
under the name ``internaltls.sni`` (the roles dial each other by the IP address in their etcd
session, so the certificate is checked for the SNI name, not for that address, as in Milvus).
Mutual (``internaltls.mutual``, Strata's own): every server also requires a client certificate
signed by the same CA, and every channel presents the role's certificate.

A process speaks to its peers one way only, so the credentials are the process's: the launcher
installs them once (``install``) before any role starts, and ``common.grpcutil`` builds every
internal server and channel with them. The proxy's client port is not internal: it follows
``common.security.tlsMode`` (``proxy/auth/tls.py``). Without ``install`` everything is plaintext,
as before (tests that run roles in one process build no certificates).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog

from common.config import InternalTlsConfig

log = structlog.get_logger().bind(component="internaltls")


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read {key} {path}: {err.strerror or err}") from err


@dataclass(frozen=True, slots=True)
class InternalTls:
    """The PEM bytes of one process's internal TLS, read once; builds gRPC credentials from them."""

    chain: bytes
    key: bytes
    ca: bytes
    sni: str
    mutual: bool

    @classmethod
    def load(cls, config: InternalTlsConfig) -> InternalTls:
        """Read the files of ``config`` (enabled). Raises ``ValueError`` naming an unreadable file."""
        return cls(
            chain=_read(config.server_pem_path, "internaltls.serverPemPath"),
            key=_read(config.server_key_path, "internaltls.serverKeyPath"),
            ca=_read(config.ca_pem_path, "internaltls.caPemPath"),
            sni=config.sni,
            mutual=config.mutual,
        )

    def server_credentials(self) -> grpc.ServerCredentials:
        """A role's port: TLS only; with ``mutual`` the caller's certificate must be signed by the CA."""
        return grpc.ssl_server_credentials(
            [(self.key, self.chain)],
            root_certificates=self.ca if self.mutual else None,
            require_client_auth=self.mutual,
        )

    def channel_credentials(self) -> grpc.ChannelCredentials:
        """A channel to another role: trusts the CA only; with ``mutual`` it shows the role's certificate."""
        if self.mutual:
            return grpc.ssl_channel_credentials(root_certificates=self.ca, private_key=self.key,
                                                certificate_chain=self.chain)
        return grpc.ssl_channel_credentials(root_certificates=self.ca)

    def channel_options(self) -> list[tuple[str, str]]:
        """The name the server's certificate is checked against, whatever address is dialled."""
        return [("grpc.ssl_target_name_override", self.sni)]


class _Installed:
    """The process's internal TLS; None until ``install`` with an enabled config (then plaintext)."""

    tls: InternalTls | None = None


def install(config: InternalTlsConfig) -> InternalTls | None:
    """Make ``config`` the process's internal TLS: before any role's server or channel exists.

    Reads the certificate files now, so a bad path is refused before anything starts (``ValueError``).
    A disabled config installs plaintext. Returns what is installed.
    """
    _Installed.tls = InternalTls.load(config) if config.enabled else None
    log.info("internal tls", enabled=config.enabled, mutual=config.mutual if config.enabled else None,
             sni=config.sni if config.enabled else None)
    return _Installed.tls


def installed() -> InternalTls | None:
    """The process's internal TLS, or None (plaintext)."""
    return _Installed.tls


def server_credentials() -> grpc.ServerCredentials | None:
    """Credentials of an internal server port; None for plaintext."""
    tls = _Installed.tls
    return None if tls is None else tls.server_credentials()


def secure_channel(
    address: str,
    options: list[tuple[str, int]],
    interceptors: Sequence[grpc.aio.ClientInterceptor] | None = None,
) -> grpc.aio.Channel:
    """A grpc.aio channel to another role: TLS if installed, else plaintext; ``options`` and ``interceptors`` as given."""
    tls = _Installed.tls
    if tls is None:
        return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
    return grpc.aio.secure_channel(
        address, tls.channel_credentials(), options=[*options, *tls.channel_options()], interceptors=interceptors
    )
