"""Certificates a test makes to its measure (names, expiry, signer), with ``cryptography``:

    authority = Authority(tmp_path)                      # a CA; authority.pem to trust it
    context = authority.server(["localhost"], days=2)    # a server context presenting a leaf it signed

`Authority.server` with ``signed=False`` presents a self-signed leaf instead. ``days`` may be
negative: the certificate expired that long ago (it was valid for the ten days before).
"""

from __future__ import annotations

import ipaddress
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_SIGNS_CERTIFICATES = x509.KeyUsage(
    digital_signature=False,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class Authority:
    """A test CA whose certificate is written to ``pem`` (a CA bundle for the check to trust)."""

    def __init__(self, directory: Path, name: str = "Pulse tls test CA") -> None:
        self.directory = directory
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(_name(name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=30))
            .not_valid_after(now + timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(_SIGNS_CERTIFICATES, critical=True)  # Python 3.13's strict verification wants it
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        self.pem = directory / "ca.pem"
        self.pem.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))
        self.issued = 0

    def leaf(self, names: list[str], *, days: float, signed: bool = True) -> tuple[Path, Path]:
        """A server certificate for ``names`` (DNS names or IP addresses) expiring in ``days``:
        the paths of its PEM and of its key."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.now(UTC)
        not_after = now + timedelta(days=days)
        alternatives: list[x509.GeneralName] = []
        for name in names:
            try:
                alternatives.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                alternatives.append(x509.DNSName(name))
        issuer, signer = (self.certificate.subject, self.key) if signed else (_name(names[0]), key)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(names[0]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(min(now, not_after) - timedelta(days=10))
            .not_valid_after(not_after)
            .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        )
        if signed:
            identifier = x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key())
            builder = builder.add_extension(identifier, critical=False)
        certificate = builder.sign(signer, hashes.SHA256())
        self.issued += 1
        pem, key_pem = self.directory / f"leaf{self.issued}.pem", self.directory / f"leaf{self.issued}.key"
        pem.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_pem.write_bytes(_pem(key))
        return pem, key_pem

    def server(self, names: list[str], *, days: float, signed: bool = True) -> ssl.SSLContext:
        """A server-side TLS context presenting `leaf` (names, days, signed)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*self.leaf(names, days=days, signed=signed))
        return context
