"""Fixtures of the outbound HTTP tests: a test CA and an https target whose certificate it signed."""

import shutil
import ssl
import subprocess

import pytest

from tests.support.target import HTTPTarget

CERT_DAYS = 30


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    """A test CA and a server certificate for 127.0.0.1 and localhost that it signed, valid CERT_DAYS."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed")
    path = tmp_path_factory.mktemp("tls")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=path, check=True, capture_output=True)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    days = ("-days", str(CERT_DAYS))
    run("req", "-x509", *ec, *days, "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Pulse test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (path / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\n"
        "subjectKeyIdentifier=hash\n"
    )
    run("x509", "-req", *days, "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-extfile", "server.ext", "-out", "server.pem")  # fmt: skip
    return path


@pytest.fixture
def tls_target(certificates):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    with HTTPTarget(tls=context) as server:
        yield server
