"""Fixtures the uptime tests share."""

import json

import pytest

from actors import notifications
from tests.support.stub import declare


@pytest.fixture
def notify(broker, stub_worker, vendors):
    """Deliver the events written so far (broadcast, then send) to the fake webhook receiver:
    the payloads it received."""
    for actor in (notifications.broadcast, notifications.send):
        declare(broker, actor)

    def deliver():
        broker.join("notifications", fail_fast=True)
        stub_worker.join()
        return [json.loads(r.body) for r in vendors.attempts("webhook")]

    return deliver
