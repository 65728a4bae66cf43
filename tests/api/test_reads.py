"""The API's read side on the real service: incidents with their updates, on-call alerts with
their timelines (who was paged, how it went, who acknowledged and via what), a component's checks
and uptime; newest first a page at a time, filtered; another organization's rows are 404, and no
person's phone number or address, no vendor error and no source's token is ever answered."""

from datetime import timedelta

import pytest
import requests

from pulse import configfile
from pulse.api.tokens import create
from pulse.db import db
from pulse.inbound.tokens import digest
from pulse.models import (
    AlertSource,
    Component,
    Incident,
    IncidentUpdate,
    Notification,
    OnCallAlert,
    Organization,
    utcnow,
)
from pulse.oncall import alerts
from tests.cleanup.conftest import add_checks
from tests.oncall.test_spec import STEADY
from tests.support.serve import running

NOW = utcnow()
BAD_CURSOR = "cursor is not one this API gave (use next_cursor as it came)"
BAD_TIME = "since must be an ISO 8601 time with its offset, such as 2026-12-07T14:00:00Z (a + is sent as %2B)"
PERSONAL = ("+1415555", "@acme.example", "s3cr3t", "twilio says")


@pytest.fixture
def rows(database):
    """acme (people with phones and addresses, paged now) and globex, from one file; acme's api
    has an open incident whose alert paged carol by SMS and was acknowledged by her reply, its web
    a resolved incident; acme's source app an alert of its own; globex an incident of its own."""
    configfile.apply(
        configfile.load(STEADY + STEADY.replace("slug: acme", "slug: globex").split("organizations:\n")[1])
    )
    acme, globex = Organization.get(slug="acme"), Organization.get(slug="globex")
    api, web = (Component.get(organization=acme, key=key) for key in ("api", "web"))
    resolved = Incident.create(
        organization=acme,
        component=web,
        title="Web down",
        status="RESOLVED",
        started_at=NOW - timedelta(days=3),
        resolved_at=NOW - timedelta(days=2),
    )
    IncidentUpdate.create(
        incident=resolved, status="INVESTIGATING", message="HTTP 502", created_at=NOW - timedelta(days=3)
    )
    IncidentUpdate.create(
        incident=resolved, status="RESOLVED", message="all conditions passed", created_at=NOW - timedelta(days=2)
    )
    opened = Incident.create(organization=acme, component=api, title="API down", started_at=NOW - timedelta(hours=1))
    IncidentUpdate.create(
        incident=opened, status="INVESTIGATING", message="connection refused", created_at=NOW - timedelta(hours=1)
    )
    alerts.open_alert(opened.id, NOW - timedelta(hours=1))
    Notification.update(status="failed", last_error="twilio says +14155550102 is unreachable").execute()
    alert = OnCallAlert.get(OnCallAlert.incident == opened.id)
    alerts.acknowledge(alert.id, "carol", "sms", NOW - timedelta(minutes=50))
    token = digest("s3cr3t-source-token")
    source = AlertSource.create(organization=acme, key="app", name="App", kind="events", token_sha256=token, routes=[])
    with db.atomic():
        policy = alerts.frozen_policy(acme.id, "default")
        alerts.open_keyed(source, "disk-full", "Disk full", {}, policy, NOW - timedelta(minutes=10))
    theirs = Incident.create(
        organization=globex, component=Component.get(organization=globex, key="api"), title="Theirs"
    )
    return {"resolved": resolved, "opened": opened, "alert": alert, "theirs": theirs, "api": api}


@pytest.fixture
def service(settings, rows):
    with running(settings) as running_service:
        yield running_service


def get(service, path, bearer=None, **params):
    bearer = bearer or create("acme", ["read"])[1]
    headers = {"Authorization": f"Bearer {bearer}"}
    return requests.get(f"http://127.0.0.1:{service.port}{path}", headers=headers, params=params, timeout=10)


def walk(service, path, field, **params):
    """Every row of a listing, a page of 2 at a time: (rows, pages)."""
    bearer = create("acme", ["read"])[1]
    found, cursor, count = [], None, 0
    while True:
        answered = get(service, path, bearer, limit="2", **params, **({"cursor": cursor} if cursor else {}))
        assert answered.status_code == 200, answered.text
        found += answered.json()[field]
        count += 1
        cursor = answered.json()["next_cursor"]
        if cursor is None:
            return found, count


def test_incidents_newest_first_filtered_and_one_with_its_updates(service, rows):
    listed, pages = walk(service, "/api/v1/incidents", "incidents")
    opened, resolved = rows["opened"], rows["resolved"]

    assert ([i["id"] for i in listed], pages) == ([opened.id, resolved.id], 1)
    assert listed[0] == {
        "id": opened.id,
        "title": "API down",
        "status": "INVESTIGATING",
        "impact": "MAJOR_OUTAGE",
        "automatic": False,
        "component": "api",
        "alert": rows["alert"].id,
        "started_at": opened.started_at.isoformat(),
        "resolved_at": None,
    }
    assert (listed[1]["component"], listed[1]["alert"], listed[1]["status"]) == ("web", None, "RESOLVED")
    ids = lambda **f: [i["id"] for i in walk(service, "/api/v1/incidents", "incidents", **f)[0]]  # noqa: E731
    assert ids(status="open") == [opened.id] and ids(status="resolved") == [resolved.id]
    assert ids(component="web") == [resolved.id] and ids(component="nope") == []
    assert ids(since=(NOW - timedelta(days=1)).isoformat()) == [opened.id]
    one = get(service, f"/api/v1/incidents/{resolved.id}").json()
    assert one["updates"] == [
        {"at": (NOW - timedelta(days=3)).isoformat(), "status": "INVESTIGATING", "message": "HTTP 502"},
        {"at": (NOW - timedelta(days=2)).isoformat(), "status": "RESOLVED", "message": "all conditions passed"},
    ]
    assert {k: v for k, v in one.items() if k != "updates"} == listed[1]


def test_many_incidents_are_each_on_exactly_one_page(service, rows):
    acme = rows["api"].organization_id
    for n in range(9):
        Incident.create(organization=acme, title=f"By hand {n}", started_at=NOW)

    listed, pages = walk(service, "/api/v1/incidents", "incidents")

    assert [i["id"] for i in listed] == sorted(
        (i.id for i in Incident.select().where(Incident.organization == acme)), reverse=True
    )
    assert pages == 6 and listed[0]["component"] is None


def test_an_alert_shows_who_was_paged_and_who_acknowledged_without_contact_details(service, rows):
    alert = rows["alert"]

    listed, _ = walk(service, "/api/v1/alerts", "alerts")
    one = get(service, f"/api/v1/alerts/{alert.id}")

    assert [(a["source"], a["dedup_key"], a["component"], a["status"]) for a in listed] == [
        ("app", "disk-full", None, "triggered"),
        (None, None, "api", "acknowledged"),
    ]
    shown = one.json()
    assert {k: v for k, v in shown.items() if k != "timeline"} == listed[1]
    assert (shown["incident"], shown["policy"], shown["level"], shown["round"]) == (rows["opened"].id, "default", 1, 1)
    assert shown["acknowledged"] == {"by": "carol", "via": "sms", "at": (NOW - timedelta(minutes=50)).isoformat()}
    steps = [(s["kind"], s["person"], s["channel"], s.get("delivery")) for s in shown["timeline"]]
    assert steps == [
        ("opened", None, None, None),
        ("paged", "carol", "sms", "failed"),
        ("acknowledged", "carol", None, None),
    ]
    assert shown["timeline"][1]["note"] == "Carol by sms"
    assert all("error" not in s for s in shown["timeline"])
    for body in (one.text, get(service, "/api/v1/alerts").text):
        for personal in PERSONAL:
            assert personal not in body


def test_alerts_filtered_by_status_source_and_since(service, rows):
    ids = lambda **f: [a["id"] for a in walk(service, "/api/v1/alerts", "alerts", **f)[0]]  # noqa: E731
    keyed = OnCallAlert.get(OnCallAlert.dedup_key == "disk-full").id

    assert ids(status="acknowledged") == [rows["alert"].id] and ids(status="resolved") == []
    assert ids(status="triggered") == ids(source="app") == [keyed]
    assert ids(since=(NOW - timedelta(minutes=30)).isoformat().replace("+00:00", "Z")) == [keyed]


def test_another_organizations_incident_or_alert_is_404(service, rows):
    globex = create("globex", ["read"])[1]

    theirs = get(service, f"/api/v1/incidents/{rows['theirs'].id}")
    ours = get(service, f"/api/v1/alerts/{rows['alert'].id}", globex)

    assert (theirs.status_code, theirs.json()) == (404, {"error": f"no incident '{rows['theirs'].id}'"})
    assert (ours.status_code, ours.json()) == (404, {"error": f"no alert '{rows['alert'].id}'"})
    assert [i["title"] for i in get(service, "/api/v1/incidents", globex).json()["incidents"]] == ["Theirs"]
    assert get(service, "/api/v1/alerts", globex).json() == {"alerts": [], "next_cursor": None}
    for path in ("/api/v1/incidents/abc", "/api/v1/incidents/99999999999999999999", "/api/v1/alerts/-1"):
        assert get(service, path).status_code == 404
    assert get(service, "/api/v1/components/nope/checks").json() == {"error": "no component 'nope'"}
    assert get(service, "/api/v1/components/api/uptime", globex).json()["key"] == "api"  # globex's own api


def test_checks_newest_first_each_on_one_page_between_since_and_until(service, rows):
    api = rows["api"]
    hour = NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    slots = [hour + timedelta(minutes=5 * n) for n in range(7)]
    add_checks(api.id, [(slot, slot + timedelta(seconds=1), "OPERATIONAL", 120 + n) for n, slot in enumerate(slots)])
    failed = hour + timedelta(minutes=1)
    db.execute_sql(
        "INSERT INTO uptime_check (component_id, scheduled_at, checked_at, status_code, response_time_ms, success,"
        " outcome, error, condition_results) VALUES (%s, %s, %s, 500, 40, false, 'MAJOR_OUTAGE', NULL, %s)",
        (api.id, failed, failed, '[{"condition": "[STATUS_CODE] == 200", "success": false, "resolved": "500 == 200"}]'),
    )

    listed, pages = walk(service, "/api/v1/components/api/checks", "checks")
    between, _ = walk(
        service, "/api/v1/components/api/checks", "checks", since=slots[1].isoformat(), until=slots[3].isoformat()
    )

    assert [c["at"] for c in listed] == [s.isoformat() for s in sorted([*slots, failed], reverse=True)]
    assert pages == 4
    assert listed[0] == {
        "at": slots[6].isoformat(),
        "checked_at": (slots[6] + timedelta(seconds=1)).isoformat(),
        "outcome": "OPERATIONAL",
        "success": True,
        "response_time_ms": 126,
        "status_code": 200,
        "reason": None,
    }
    assert (listed[-2]["outcome"], listed[-2]["reason"], listed[-2]["status_code"]) == (
        "MAJOR_OUTAGE",
        "500 == 200",
        500,
    )
    assert [c["at"] for c in between] == [slots[2].isoformat(), slots[1].isoformat()]


def test_uptime_over_each_window_and_by_day(service, rows):
    api = rows["api"]
    today = NOW.replace(hour=0, minute=0, second=0, microsecond=0)
    seen = [(0, "OPERATIONAL"), (0, "MAJOR_OUTAGE"), (0, "UNKNOWN"), (2, "DEGRADED_PERFORMANCE"), (40, "MAJOR_OUTAGE")]
    slots = [(today - timedelta(days=d), o) for d, o in seen]
    add_checks(
        api.id, [(at + timedelta(minutes=n), at + timedelta(minutes=n), o, 10) for n, (at, o) in enumerate(slots)]
    )
    Component.update(interval_seconds=60).where(Component.id == api.id).execute()

    shown = get(service, "/api/v1/components/api/uptime", days="3").json()

    assert shown["key"] == "api" and shown["at"]
    assert shown["windows"]["7d"] == {"uptime": 66.66, "checks": 3, "unknown_s": 60}
    assert shown["windows"]["30d"] == shown["windows"]["7d"]
    assert shown["windows"]["90d"] == {"uptime": 50.0, "checks": 4, "unknown_s": 60}
    assert [(d["date"], d["uptime"], d["checks"]) for d in shown["days"]] == [
        ((today - timedelta(days=2)).date().isoformat(), 100.0, 1),
        ((today - timedelta(days=1)).date().isoformat(), None, 0),
        (today.date().isoformat(), 50.0, 2),
    ]
    assert "days" not in get(service, "/api/v1/components/api/uptime").json()


@pytest.mark.parametrize(
    ("path", "params", "said"),
    [
        ("/api/v1/incidents", {"status": "closed"}, "status must be one of open, resolved"),
        ("/api/v1/alerts", {"status": "open"}, "status must be one of triggered, acknowledged, exhausted, resolved"),
        ("/api/v1/alerts", {"since": "2026-12-07T14:00:00"}, BAD_TIME),
        ("/api/v1/incidents", {"cursor": "YWJj"}, BAD_CURSOR),
        ("/api/v1/incidents", {"component": "a\x00b"}, "component must be a key: a-z, 0-9, - and _, up to 64"),
        ("/api/v1/alerts", {"source": "App"}, "source must be a key: a-z, 0-9, - and _, up to 64"),
        ("/api/v1/components/api/checks", {"cursor": "MTI"}, BAD_CURSOR),
        ("/api/v1/components/api/checks", {"until": "yesterday"}, BAD_TIME.replace("since", "until")),
        ("/api/v1/components/api/uptime", {"days": "91"}, "days must be a whole number from 1 to 90"),
        ("/api/v1/components/api/uptime", {"days": "0"}, "days must be a whole number from 1 to 90"),
    ],
)
def test_a_bad_query_is_refused_naming_it(service, path, params, said):
    answered = get(service, path, **params)

    assert (answered.status_code, answered.json()) == (400, {"error": said})


def test_the_read_side_needs_the_read_scope(service, rows):
    oncall = create("acme", ["oncall", "incidents"])[1]
    for path in ("/api/v1/incidents", f"/api/v1/alerts/{rows['alert'].id}", "/api/v1/components/api/checks"):
        answered = get(service, path, oncall)
        assert (answered.status_code, answered.json()) == (403, {"error": "this token lacks the read scope"})
