"""Drill 17: checks from three locations, each on a host of its own, while their links break.

Each location (eu, us, asia) is a worker (``PULSE_LOCATION``) inside a network namespace of the
test's own (`tests.support.hosts`): it reaches RabbitMQ and the checked targets over its veth pair,
and nothing else; its ``PULSE_DATABASE_URL`` leads nowhere. One central worker, outside, sends each
slot to the locations and takes the verdicts. A link is cut by closing the relay that carries it on
the root side: inside the host a connection to the target is still accepted (by the host's own
relay), then dropped, so the location's check fails while its way to RabbitMQ stays up.

What it proves, in rows (``uptime_check``, ``location_check``, incidents, events), not timings:

1. one location cut off from a target: its failures are in ``location_check``; the quorum keeps
   the component operational; no incident, no event;
2. two of three cut off from it: one outage (MAJOR_OUTAGE), one incident, one
   ``component.status_changed`` event, delivered once to a webhook channel;
3. one location cut off from everything but RabbitMQ, its canary too: its failed checks abstain,
   ``location_abstaining`` is 1 for it, and no component changes status;
4. one location's host killed mid-run: the two others decide every later slot, its absence is
   recorded slot by slot, ``location_silent`` becomes 1 for it; started again on a new host, it
   answers again; nothing is doubled (one verdict per slot, one row per slot and location).
"""

import contextlib
import itertools
import socket
from datetime import timedelta
from urllib.parse import urlsplit

import pytest

from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.config import get_settings
from pulse.db import db
from pulse.locations import dispatch, wire
from pulse.locations import gauges as location_gauges  # registers the gauges FromDatabase reads
from pulse.models import Component, Event, Incident, Notification, NotificationChannel, UptimeCheck, utcnow
from pulse.models.event import INCIDENT_OPENED, STATUS_CHANGED
from pulse.models.notification import SENT
from pulse.rabbitmq import channel
from pulse.telemetry.gauges import FromDatabase
from tests.conftest import HEALTHY
from tests.support.hosts import Host, HostsUnavailableError
from tests.support.target import HTTPTarget
from tests.support.vendors import Vendors
from tests.support.wait import wait_for

LOCATIONS = ["eu", "us", "asia"]
INTERVAL = 15  # seconds: the shortest interval a component may have
NO_DATABASE = "postgresql://nobody@127.0.0.1:9/none"  # nothing listens: any use of it would fail
SLOT_WAIT = 3 * INTERVAL  # seconds a slot's verdict may take, at most


class Location:
    """A location's worker on a host of its own, reaching RabbitMQ, the ``targets`` and (at the
    host's gateway) the ``canary`` over the host's link."""

    def __init__(self, workers, name, targets, canary=None, host_name=None):
        self.name = name
        self.host = Host(host_name or name)
        self.host.loopback(port(get_settings().broker_url), *(t.port for t in targets))
        env = {
            "PULSE_LOCATION": name,
            "PULSE_LOCATION_KEY": wire.key(get_settings().locations_secret, name),
            "PULSE_DATABASE_URL": NO_DATABASE,
        }
        if canary is not None:
            self.host.forward(canary)
            env["PULSE_LOCATION_CANARIES"] = f"{self.host.gateway}:{canary}"
        with channel(get_settings()) as ch:  # its queue, as `pulse locations add` makes it
            dispatch.declare(ch, name, get_settings().queue_type)
        self.worker = workers(threads=2, modules=("pulse.actors",), env=env, host=self.host)

    def cut(self, *ports):
        """Cut the host's link to each of ``ports`` (its other traffic goes on)."""
        for relay in [r for r in self.host.relays if r.server.getsockname()[1] in ports]:
            relay.close()
            self.host.relays.remove(relay)


@pytest.fixture
def places(workers):
    """Start locations: ``places(name, targets, canary=None, host_name=None)``; their hosts closed at the end."""
    started = []

    def start(*args, **kwargs):
        try:
            location = Location(workers, *args, **kwargs)
        except HostsUnavailableError as e:
            pytest.skip(str(e))
        started.append(location)
        return location

    yield start
    for location in started:
        location.host.close()


@pytest.fixture
def targets():
    """Healthy targets: ``targets(n)``."""
    with contextlib.ExitStack() as stack:

        def make(n):
            made = [stack.enter_context(HTTPTarget()) for _ in range(n)]
            for target in made:
                target.answer("/health", body=HEALTHY, headers={"Content-Type": "application/json"})
            return made

        yield make


@pytest.fixture
def central(workers):
    return workers(threads=2)


def located(make_component, target, key, first_slot):
    return make_component(
        target,
        key=key,
        name=key,
        locations=LOCATIONS,
        interval_seconds=INTERVAL,
        failure_threshold=1,
        next_check_at=first_slot,
    )


def soon(seconds=3):
    return (utcnow() + timedelta(seconds=seconds)).replace(microsecond=0)


def verdicts(component):
    """The component's verdicts, oldest first: (slot, outcome)."""
    query = UptimeCheck.select().where(UptimeCheck.component == component.id).order_by(UptimeCheck.scheduled_at)
    return [(c.scheduled_at, c.outcome) for c in query]


def wait_verdicts(component, count):
    return wait_for(
        lambda: len(found := verdicts(component)) >= count and found,
        f"{count} verdicts of {component.key}",
        timeout=count * INTERVAL + SLOT_WAIT,
        every=0.5,
    )


def seen(component):
    """Each location's rows for the component: {location: [(slot, seen, abstained, reason)]}."""
    rows = db.execute_sql(
        "SELECT location, scheduled_at, seen, abstained, reason FROM location_check WHERE component_id = %s "
        "ORDER BY scheduled_at",
        (component.id,),
    ).fetchall()
    found = {name: [] for name in LOCATIONS}
    for location, *row in rows:
        found[location].append(tuple(row))
    return found


def gauge(name):
    families = {family.name: family for family in FromDatabase(get_settings()).collect()}
    return {s.labels["location"]: s.value for s in families[name].samples}


def assert_nothing_doubled():
    assert (
        db.execute_sql(
            "SELECT component_id, scheduled_at FROM uptime_check GROUP BY 1, 2 HAVING count(*) > 1"
        ).fetchall()
        == []
    )
    assert (
        db.execute_sql(
            "SELECT component_id, scheduled_at, location FROM location_check GROUP BY 1, 2, 3 HAVING count(*) > 1"
        ).fetchall()
        == []
    )


def status(component):
    return Component.get_by_id(component.id).status


@pytest.mark.minutes
def test_a_target_cut_off_from_one_location_is_up_and_from_two_is_down(central, places, targets, make_component):
    one_cut, two_cut = targets(2)
    everywhere = {name: places(name, [one_cut, two_cut]) for name in LOCATIONS}
    everywhere["eu"].cut(one_cut.port, two_cut.port)
    everywhere["us"].cut(two_cut.port)
    with Vendors() as vendors:
        slot = soon()
        up = located(make_component, one_cut, "one-cut", slot)
        down = located(make_component, two_cut, "two-cut", slot)
        NotificationChannel.create(
            organization=up.organization, key="hook", type="webhook", settings={"url": vendors.webhook_receiver()}
        )

        kept = wait_verdicts(up, 2)
        lost = wait_verdicts(down, 2)
        vendors.wait_received("webhook", 2)
        wait_for(lambda: all(n.status == SENT for n in Notification.select()), "the notifications sent", every=0.5)
        delivered = sorted(m.json["type"] for m in vendors.attempts("webhook"))

    assert [outcome for _, outcome in kept[:2]] == [OPERATIONAL, OPERATIONAL]
    assert [outcome for _, outcome in lost[:2]] == [MAJOR_OUTAGE, MAJOR_OUTAGE]
    assert (status(up), status(down)) == (OPERATIONAL, MAJOR_OUTAGE)
    failing_eu = seen(up)["eu"][:2]
    assert [(s, abstained) for _, s, abstained, _ in failing_eu] == [(MAJOR_OUTAGE, False)] * 2
    assert all(reason for *_, reason in failing_eu)  # why it failed, from eu's side
    assert [s for _, s, *_ in seen(up)["us"][:2]] == [OPERATIONAL] * 2
    assert [s for _, s, *_ in seen(down)["asia"][:2]] == [OPERATIONAL] * 2
    check = UptimeCheck.select().where(UptimeCheck.component == down.id).order_by(UptimeCheck.scheduled_at).first()
    assert check.error.startswith("failing from 2 of 3 locations (eu: ")
    assert [i.component_id for i in Incident.select()] == [down.id]
    changed = Event.select().where(Event.type == STATUS_CHANGED)
    assert [e.component_id for e in changed] == [down.id]
    assert delivered == [STATUS_CHANGED, INCIDENT_OPENED]  # each once (sorted)
    assert_nothing_doubled()


@pytest.mark.minutes
def test_a_location_that_cannot_reach_its_canaries_abstains(central, places, targets, make_component):
    [target] = targets(1)
    with socket.create_server(("127.0.0.1", 0)) as canary:  # accepts connections (its backlog), answers nothing
        here = canary.getsockname()[1]
        everywhere = {name: places(name, [target], canary=here) for name in LOCATIONS}
        everywhere["eu"].cut(target.port, here)  # everything but RabbitMQ
        component = located(make_component, target, "api", soon())

        found = wait_verdicts(component, 2)
        # The verdicts need two locations of three: eu's abstentions may come after them.
        wait_for(lambda: len(seen(component).get("eu", [])) >= 2, "eu's two results", every=0.5)
        abstaining = gauge("location_abstaining")

    assert [outcome for _, outcome in found[:2]] == [OPERATIONAL, OPERATIONAL]
    assert [(s, abstained) for _, s, abstained, _ in seen(component)["eu"][:2]] == [(MAJOR_OUTAGE, True)] * 2
    assert [(s, abstained) for _, s, abstained, _ in seen(component)["us"][:2]] == [(OPERATIONAL, False)] * 2
    assert abstaining == {"eu": 1, "us": 0, "asia": 0}
    assert status(component) == OPERATIONAL
    assert Event.select().where(Event.type == STATUS_CHANGED).count() == 0 and Incident.select().count() == 0
    assert "cannot reach the internet" in everywhere["eu"].worker.output
    assert_nothing_doubled()


@pytest.mark.minutes
def test_when_a_location_dies_the_others_decide_and_nothing_is_doubled(central, places, targets, make_component):
    [target] = targets(1)
    everywhere = {name: places(name, [target]) for name in LOCATIONS}
    component = located(make_component, target, "api", soon())

    wait_for(lambda: len(seen(component)["asia"]) >= 1, "asia's first answer", timeout=SLOT_WAIT, every=0.5)
    everywhere["asia"].host.kill()  # every process of the host, at once
    killed_at = utcnow()
    absent = wait_for(  # recorded at each slot's decide_by, once its verdict is taken without asia
        lambda: len(later := [(slot, s) for slot, s, *_ in seen(component)["asia"] if slot > killed_at]) >= 2 and later,
        "asia absent from two slots",
        timeout=2 * INTERVAL + SLOT_WAIT,
        every=0.5,
    )
    after = [(slot, outcome) for slot, outcome in verdicts(component) if slot > killed_at]
    assert [slot for slot, _ in after[:2]] == [slot for slot, _ in absent[:2]]
    assert [outcome for _, outcome in after[:2]] == [OPERATIONAL, OPERATIONAL]  # eu and us decided
    assert [s for _, s in absent] == [None] * len(absent)
    reasons = [reason for slot, _, _, reason in seen(component)["asia"] if slot > killed_at]
    assert set(reasons) == {"no result within the slot's time"}

    db.execute_sql(  # its interval and the grace went by (rather than waiting 45 s)
        "UPDATE location SET last_result_at = last_result_at - make_interval(secs => %s) WHERE name = 'asia'",
        (INTERVAL + location_gauges.SILENCE_GRACE_S + 1,),
    )
    assert gauge("location_silent") == {"eu": 0, "us": 0, "asia": 1}

    places("asia", [target], host_name="asia2")  # started again, on a new host
    back_at = utcnow()
    wait_for(
        lambda: any(slot > back_at and s == OPERATIONAL for slot, s, *_ in seen(component)["asia"]),
        "asia answering again",
        timeout=INTERVAL + SLOT_WAIT,
        every=0.5,
    )
    assert gauge("location_silent")["asia"] == 0
    slots = [slot for slot, _ in verdicts(component)]
    assert slots == sorted(set(slots))
    assert all(b - a == timedelta(seconds=INTERVAL) for a, b in itertools.pairwise(slots))  # none missing
    assert status(component) == OPERATIONAL and Incident.select().count() == 0
    assert_nothing_doubled()


def port(url):
    return urlsplit(url).port
