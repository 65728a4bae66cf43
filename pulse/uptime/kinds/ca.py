"""A component's own CA: the ``ca`` and ``ca_file`` fields of the kinds that speak TLS (http with
an https url, tcp with ``tls: true``, tls), the CA certificates its checks verify the server's
certificate against in place of the system's, its name checked all the same.

    - key: intranet
      name: Intranet
      url: https://intranet.acme.internal/health
      ca_file: /etc/pulse/acme-ca.pem  # or ca: "${ACME_CA_PEM}", the PEM text itself

``ca_file`` is read where ``pulse apply`` runs, and the certificates are stored as PEM text in the
component's ``target`` column rather than the path: a worker on another host, or a location, needs
no file, and a CA renewed in the file is taken up at the next apply. Only the certificates are
kept (parsed with ``cryptography``, RFC 7468's textual encoding): a private key or any other block
beside them is left out. Each distinct CA costs a worker process one TLS context
(`pulse.net.dial.context`).
"""

from __future__ import annotations

import functools

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from pydantic import Field

from pulse.spec import Strict

MAX_FILE = 1024 * 1024  # bytes of a ca_file read
MAX_PEM = 64 * 1024  # characters of a component's CA certificates, as stored


class Fields(Strict):
    """The ``ca`` and ``ca_file`` fields (one of them at most)."""

    ca: str | None = Field(None, min_length=1, max_length=MAX_PEM, repr=False)
    ca_file: str | None = Field(None, min_length=1, max_length=4096)

    @functools.cached_property
    def trusted(self) -> str | None:
        """The CA certificates its checks trust, as PEM text (the certificates alone); None for
        the system's. ValueError naming the field and what is wrong with it, never its text."""
        if self.ca is not None and self.ca_file is not None:
            raise ValueError("give ca or ca_file, not both")
        if self.ca_file is not None:
            return load(self.ca_file, "ca_file")
        if self.ca is not None:
            return certificates(self.ca.encode(), "ca")
        return None


def given(spec: Fields) -> str | None:
    """The field that names a CA (``ca`` or ``ca_file``), or None."""
    return "ca" if spec.ca is not None else "ca_file" if spec.ca_file is not None else None


def problems(spec: Fields) -> list[str]:
    """What is wrong with the component's CA: both fields given, a file that cannot be read, a
    text that holds no certificate."""
    try:
        spec.trusted  # noqa: B018 - kept for the kind's `stored`
    except ValueError as e:
        return [str(e)]
    return []


def load(path: str, what: str) -> str:
    """The certificates of the PEM file at ``path`` (`certificates`); ValueError naming ``what``
    (the field or option) when it cannot be read or holds none."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FILE + 1)
    except OSError as e:
        raise ValueError(f"{what} cannot be read ({e.strerror or type(e).__name__})") from None
    if len(data) > MAX_FILE:
        raise ValueError(f"{what} is over {MAX_FILE // 1024 // 1024} MiB")
    return certificates(data, what)


def certificates(data: bytes, what: str) -> str:
    """The certificates in ``data`` (PEM), as PEM text and nothing else; ValueError naming
    ``what`` when it holds none, one that cannot be parsed, or more than `MAX_PEM` characters."""
    if b"-----BEGIN CERTIFICATE-----" not in data:
        raise ValueError(f"{what} holds no PEM certificate")
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        raise ValueError(f"{what} holds a certificate that cannot be parsed") from None
    text = "".join(certificate.public_bytes(Encoding.PEM).decode() for certificate in found)
    if len(text) > MAX_PEM:
        raise ValueError(f"{what} holds more than {MAX_PEM // 1024} KiB of certificates")
    return text
