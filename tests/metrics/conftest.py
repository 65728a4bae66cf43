"""Fixtures of the metrics tests: a real Prometheus, scraping an exporter the tests set."""

import os
import shutil

import pytest

from tests.support.prometheus import Prometheus


@pytest.fixture(scope="session")
def prometheus_server():
    if shutil.which("prometheus") is None:
        reason = "prometheus not found: install the Debian package prometheus"
        if os.environ.get("PULSE_REQUIRE_TOOLS") == "1":
            pytest.fail(reason + "; PULSE_REQUIRE_TOOLS=1 requires it")
        pytest.skip(reason)
    with Prometheus() as server:
        yield server


@pytest.fixture
def prometheus(prometheus_server):
    prometheus_server.set("pulse_test_latency_ms", a=120)
    return prometheus_server
