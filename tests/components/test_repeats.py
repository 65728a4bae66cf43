"""Repeat notifications while down (`pulse.components.repeats`) with an injected clock: a component
with ``repeat_while_down`` tells its channels again every period while its incident is open, once
per period however often the tick runs, never in a burst after a pause, bounded; and nothing for a
component without the setting, a paused one, or once the incident is resolved."""

from datetime import UTC, datetime, timedelta

import pytest

from pulse import configfile
from pulse.components import repeats
from pulse.errors import ConfigError
from pulse.models import Component, Event, Incident, Notification
from pulse.models.event import COMPONENT_STILL_DOWN
from pulse.notifications import delivery
from pulse.notifications.render import render

T = datetime(2026, 12, 4, 12, tzinfo=UTC)
FILE = """
organizations:
  - slug: acme
    name: Acme
    channels:
      - {key: ops, type: webhook, url: "http://127.0.0.1:9/hook"}
      - {key: chat, type: webhook, url: "http://127.0.0.1:9/chat", events: [incident.opened]}
    components:
      - {key: api, name: API, url: "http://127.0.0.1:9/", repeat_while_down: 1h}
      - {key: web, name: Web, url: "http://127.0.0.1:9/"}
"""


@pytest.fixture
def incidents(database):
    configfile.apply(configfile.load(FILE))
    return {
        c.key: Incident.create(organization=c.organization_id, component=c, title=f"{c.name} down", started_at=T)
        for c in Component.select()
    }


def still_down() -> list[Event]:
    return list(Event.select().where(Event.type == COMPONENT_STILL_DOWN).order_by(Event.id))


def test_the_channels_are_told_again_each_period_while_the_incident_is_open(incidents):
    assert repeats.due(T + timedelta(minutes=59)) == []
    [first] = repeats.due(T + timedelta(minutes=60))
    assert repeats.due(T + timedelta(minutes=60, seconds=30)) == []  # the tick again, or a second scheduler
    event = Event.get_by_id(first)
    assert (event.component_id, event.incident_id, event.payload["repeat"]) == (
        incidents["api"].component_id,
        incidents["api"].id,
        1,
    )

    delivery.broadcast(first)
    assert [n.destination for n in Notification.select()] == ["webhook channel ops"]  # chat takes incident.opened only
    notice = render(event.id, event.type, event.payload, event.created_at, "Acme", None)
    assert notice.title == "Still down: API down" and notice.severity == "critical"

    repeats.due(T + timedelta(hours=2))
    Incident.update(resolved_at=T + timedelta(hours=2, minutes=30)).where(Incident.id == incidents["api"].id).execute()
    assert repeats.due(T + timedelta(hours=3)) == [] and len(still_down()) == 2


def test_a_pause_of_the_tick_sends_one_repeat_and_the_count_is_bounded(incidents):
    assert len(repeats.due(T + timedelta(hours=5, minutes=1))) == 1
    assert Incident.get_by_id(incidents["api"].id).repeats == 5
    repeats.due(T + timedelta(days=30))
    assert Incident.get_by_id(incidents["api"].id).repeats == repeats.MAX_REPEATS
    assert repeats.due(T + timedelta(days=31)) == [] and len(still_down()) == 2


def test_a_paused_component_repeats_nothing(incidents):
    Component.update(paused=True).where(Component.key == "api").execute()
    assert repeats.due(T + timedelta(hours=2)) == []


def test_a_repeat_period_out_of_bounds_is_refused():
    with pytest.raises(ConfigError) as raised:
        configfile.load(FILE.replace("repeat_while_down: 1h", "repeat_while_down: 1m"))
    assert "components[0].repeat_while_down: must be between 5m and 168h, not 1m" in str(raised.value)
