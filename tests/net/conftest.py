"""Fixtures of the outbound HTTP tests: an https target whose certificate the test CA (`certificates`) signed."""

import ssl

import pytest

from tests import conftest
from tests.support.target import HTTPTarget

CERT_DAYS = conftest.CERT_DAYS  # the certificates fixture (tests/conftest.py) makes them valid this long


@pytest.fixture
def tls_target(certificates):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    with HTTPTarget(tls=context) as server:
        yield server
