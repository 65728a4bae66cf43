"""Fixtures of the outbound HTTP tests: an https target whose certificate the test CA (`certificates`) signed."""

import ssl

import pytest

from tests.support.target import HTTPTarget


@pytest.fixture
def tls_target(certificates):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    with HTTPTarget(tls=context) as server:
        yield server
