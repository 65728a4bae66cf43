"""Heartbeat monitors made directly as rows (so that their period and grace may be shorter than the
file allows)."""

import pytest

from pulse.heartbeats.spec import digest
from pulse.models import Component, HeartbeatMonitor, Organization

TOKEN = "t" * 40


@pytest.fixture
def monitor(database):
    """A heartbeat monitor of organization acme, never pinged: make(period_s, grace_s)."""

    def make(period_s=60, grace_s=60, token=TOKEN, key="backup"):
        organization = Organization.get_or_create(slug="acme", defaults={"name": "Acme"})[0]
        component = Component.create(
            organization=organization, key=key, name="Backup", type="HEARTBEAT",
            failure_threshold=1, success_threshold=1,
        )  # fmt: skip
        HeartbeatMonitor.create(
            component=component, token_sha256=digest(token), period_seconds=period_s, grace_seconds=grace_s
        )
        return component

    return make
