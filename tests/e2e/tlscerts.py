"""Certificates made at test time: a CA, a server certificate for 127.0.0.1, a client certificate (or both in one)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pair:
    pair = Pair(directory / f"{stem}.pem", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return pair


def _builder(subject: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer).public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1)))


def make_ca(directory: Path, stem: str) -> tuple[Pair, x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (_builder(stem, _name(stem), key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return _write(directory, stem, cert, key), cert, key


def make_leaf(directory: Path, stem: str, ca: tuple[Pair, x509.Certificate, ec.EllipticCurvePrivateKey], *,
              server: bool, client: bool | None = None) -> Pair:
    """A certificate signed by ``ca``: a server's (for localhost and 127.0.0.1) and/or a client's.

    ``client`` defaults to ``not server``; both make a role's certificate for mutual internal TLS.
    """
    _, ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] if server else []
    if (not server) if client is None else client:
        usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
    builder = _builder("localhost" if server else stem, ca_cert.subject, key.public_key()).add_extension(
        x509.ExtendedKeyUsage(usages), critical=False
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    return _write(directory, stem, builder.sign(ca_key, hashes.SHA256()), key)
