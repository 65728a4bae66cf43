"""Heartbeat monitors made directly as rows (so that their period and grace may be shorter than the
file allows), and what a test reads of them."""

import pytest

from pulse.inbound.tokens import digest
from pulse.models import Component, Event, HeartbeatMonitor, Organization
from pulse.models.event import STATUS_CHANGED

TOKEN = "t" * 40


@pytest.fixture
def monitor(database):
    """A heartbeat monitor of organization acme, never pinged: make(period_s, grace_s), or on
    cron: make(cron="0 3 * * *", zone="Europe/Berlin", grace_s=...)."""

    def make(period_s=60, grace_s=60, token=TOKEN, key="backup", cron=None, zone="UTC"):
        organization = Organization.get_or_create(slug="acme", defaults={"name": "Acme"})[0]
        component = Component.create(
            organization=organization, key=key, name="Backup", type="HEARTBEAT",
            failure_threshold=1, success_threshold=1,
        )  # fmt: skip
        HeartbeatMonitor.create(
            component=component, token_sha256=digest(token), period_seconds=None if cron else period_s,
            cron=cron, time_zone=zone, grace_seconds=grace_s,
        )  # fmt: skip
        return component

    return make


def row(component):
    """The component's monitor row, as it is now."""
    return HeartbeatMonitor.get(HeartbeatMonitor.component == component.id)


def reasons():
    """Why each status change happened, in order (the events' reasons)."""
    return [e.payload["reason"] for e in Event.select().where(Event.type == STATUS_CHANGED).order_by(Event.id)]
