"""People, on-call schedules and escalation policies through the API, on the real service (`pulse
serve`'s routes, on loopback): made, read, replaced, patched and deleted by the configuration file's
spec, a person's push subscription written and never answered, logged, audited nor quoted; a
reference to a person or schedule the organization does not have refused with its path (422); what
a schedule, a policy or an alert source names not deleted (409 naming them); 409 for what the file
made until it is released; `pulse apply --prune` leaving the API's alone until the file names them;
and a page reading the schedule the API wrote."""

import logging
from datetime import timedelta

import pytest

from pulse import configfile
from pulse.api.tokens import create
from pulse.models import (
    AlertSource,
    ApiAudit,
    Component,
    EscalationPolicy,
    OnCallSchedule,
    Organization,
    Person,
    utcnow,
)
from pulse.oncall import paging
from tests.support.cli import pulse
from tests.support.serve import call

PUSH = {
    "endpoint": "https://push.example/send/pu5hENDPOINTs3cr3t",
    "keys": {"p256dh": "B" + "p256dhs3cr3t" * 7 + "x" * 3, "auth": "au7hs3cr3t-01234"},
}
SECRETS = ("pu5hENDPOINTs3cr3t", "p256dhs3cr3t", "au7hs3cr3t")
FILE = """
organizations:
  - slug: acme
    name: Acme Inc.
    people:
      - {key: alice, name: Alice, email: alice@acme.example, phone: "+14155550100"}
      - {key: bob, name: Bob, email: bob@acme.example}
    schedules:
      - key: primary
        time_zone: UTC
        layers: [{rotation: weekly, handoff: monday 09:00, start: 2026-01-05, members: [alice, bob]}]
    escalation_policies:
      - key: default
        levels: [{targets: [{schedule: primary}], wait: 5m}]
        contact: [email]
    components:
      - {key: api, name: API, url: "https://api.acme.example/", escalation_policy: default}
"""
ERIN = {"key": "erin", "name": "Erin", "phone": "+14155550104", "push": PUSH, "time_zone": "Europe/Paris"}
NIGHTS = {
    "key": "nights",
    "name": "Nights",
    "time_zone": "America/New_York",
    "layers": [
        {"every": "12h", "handoff": "19:00", "start": "2026-01-05", "members": ["erin", "alice"]},
        {"rotation": "weekly", "handoff": "monday 09:00", "start": "2026-01-05", "members": ["bob"],
         "restrict": ["sat-sun 00:00-24:00"]},
    ],
    "overrides": [{"person": "bob", "from": "2026-12-24T00:00:00-05:00", "until": "2026-12-26T00:00:00-05:00"}],
}  # fmt: skip
PAGING = {
    "key": "paging",
    "levels": [{"targets": [{"schedule": "nights"}], "wait": "5m"}, {"targets": [{"person": "erin"}]}],
    "repeat": 1,
    "contact": ["sms", "email", "push"],
}


@pytest.fixture
def acme(database):
    """acme as a file declares it: alice and bob, the schedule primary, the policy default, api."""
    configfile.apply(configfile.load(FILE))
    return Organization.get(Organization.slug == "acme")


@pytest.fixture
def writer():
    return create("acme", ["read", "write"])[1]


def made(service, writer, *paths):
    """POST each of erin, nights and paging (``paths``, in that order) and assert each was made."""
    bodies = {"/people": ERIN, "/schedules": NIGHTS, "/escalation-policies": PAGING}
    for path in paths:
        answer = call(service, "POST", path, writer, bodies[path])
        assert answer.status_code == 201, answer.text


def test_a_person_is_made_read_patched_and_deleted_and_their_push_subscription_never_answered(service, writer, caplog):
    caplog.set_level(logging.INFO)
    posted = call(service, "POST", "/people", writer, ERIN)
    read = call(service, "GET", "/people/erin", writer)

    assert posted.status_code == 201, posted.text
    assert posted.headers["location"] == "/api/v1/people/erin"
    row = Person.get(key="erin")
    assert posted.headers["etag"] == read.headers["etag"] == f'"{row.id}.1"'
    assert posted.json() == read.json()
    fingerprint = read.json()["push"]
    assert read.json() == {
        "key": "erin",
        "name": "Erin",
        "email": None,
        "phone": "+14155550104",
        "push": fingerprint,
        "time_zone": "Europe/Paris",
    }
    assert fingerprint.startswith("push.example #") and len(fingerprint) == len("push.example #") + 8
    assert (row.owner, row.push) == ("api", PUSH)

    patched = call(service, "PATCH", "/people/erin", writer, {"email": "erin@acme.example", "phone": None})
    row = Person.get(key="erin")
    assert patched.status_code == 200, patched.text
    assert (row.email, row.phone, row.push, row.version) == ("erin@acme.example", None, PUSH, 2)

    listed = call(service, "GET", "/people?limit=2", writer).json()
    assert [p["key"] for p in listed["people"]] == ["alice", "bob"] and listed["next_cursor"]
    unreachable = call(service, "PATCH", "/people/erin", writer, {"email": None, "push": None})
    assert (unreachable.status_code, unreachable.json()["problems"]) == (
        422, ["$: a person needs a way to be paged: email, phone or push"]
    )  # fmt: skip
    deleted = call(service, "DELETE", "/people/erin", writer)
    assert (deleted.status_code, Person.get_or_none(key="erin")) == (204, None)
    audited = [(r.action, r.object_type, r.object_key, r.status) for r in ApiAudit.select().order_by(ApiAudit.id)]
    assert audited == [("create", "person", "erin", 201), ("patch", "person", "erin", 200),
                       ("patch", "person", "erin", 422), ("delete", "person", "erin", 204)]  # fmt: skip
    texts = [a.text + str(dict(a.headers)) for a in (posted, read, patched, unreachable)] + [caplog.text]
    assert not [secret for secret in SECRETS for text in texts if secret in text]


def test_a_schedule_is_written_as_the_file_writes_it_and_its_overrides_replaced_by_a_patch(service, writer):
    made(service, writer, "/people")
    posted = call(service, "POST", "/schedules", writer, NIGHTS)

    assert posted.status_code == 201, posted.text
    layers = [{"rotation": None, "restrict": [], **NIGHTS["layers"][0]}, {"every": None, **NIGHTS["layers"][1]}]
    assert posted.json() == {
        **NIGHTS,
        "layers": [{k: layer[k] for k in posted.json()["layers"][0]} for layer in layers],
    }
    row = OnCallSchedule.get(key="nights")
    assert (row.owner, row.version, row.layers[0]["rotation"], row.layers[0]["every"]) == ("api", 1, "every", "12h")

    override = {"person": "erin", "from": "2027-01-01T00:00:00+00:00", "until": "2027-01-02T00:00:00+00:00"}
    patched = call(service, "PATCH", "/schedules/nights", writer, {"overrides": [override]})
    assert patched.status_code == 200, patched.text
    assert OnCallSchedule.get(key="nights").overrides == [override]
    assert patched.json()["layers"] == posted.json()["layers"]

    replaced = call(
        service, "PUT", "/schedules/nights", writer, {"time_zone": "UTC"}, **{"If-Match": patched.headers["etag"]}
    )
    assert replaced.status_code == 200, replaced.text
    row = OnCallSchedule.get(key="nights")
    assert (row.name, row.time_zone, row.layers, row.overrides, row.version) == ("nights", "UTC", [], [], 3)


def test_an_override_is_added_to_a_schedule_its_others_kept(service, writer):
    made(service, writer, "/people", "/schedules")
    new_year = {"person": "erin", "from": "2026-12-31T18:00:00-05:00", "until": "2027-01-01T09:00:00-05:00"}

    added = call(service, "POST", "/schedules/nights/overrides", writer, new_year, **{"Idempotency-Key": "ny-erin"})
    again = call(service, "POST", "/schedules/nights/overrides", writer, new_year, **{"Idempotency-Key": "ny-erin"})
    unknown = call(service, "POST", "/schedules/nights/overrides", writer, {**new_year, "person": "zoe"})
    stale = call(service, "POST", "/schedules/nights/overrides", writer, new_year, **{"If-Match": '"1.1"'})
    filed = call(service, "POST", "/schedules/primary/overrides", writer, new_year)

    assert added.status_code == 201, added.text
    assert (added.headers["location"], added.json()["overrides"]) == (
        "/api/v1/schedules/nights", [*NIGHTS["overrides"], new_year]
    )  # fmt: skip
    assert (again.status_code, again.headers["idempotent-replayed"], again.json()) == (201, "true", added.json())
    row = OnCallSchedule.get(key="nights")
    assert (row.overrides, row.version, added.headers["etag"]) == ([*NIGHTS["overrides"], new_year], 2, f'"{row.id}.2"')
    assert (unknown.status_code, unknown.json()["problems"]) == (
        422,
        ["$.person: this organization has no person 'zoe'"],
    )
    assert (stale.status_code, filed.status_code) == (412, 409)
    audited = ApiAudit.select().where(ApiAudit.action == "override").order_by(ApiAudit.id)
    assert [(r.object_type, r.object_key, r.status) for r in audited] == [
        ("schedule", "nights", 201), ("schedule", "nights", 201), ("schedule", "nights", 422),
        ("schedule", "nights", 412), ("schedule", "primary", 409),
    ]  # fmt: skip


def test_a_schedule_naming_people_the_organization_lacks_is_refused_with_each_path(service, writer):
    body = {**NIGHTS, "overrides": [{**NIGHTS["overrides"][0], "person": "zoe"}]}

    refused = call(service, "POST", "/schedules", writer, body)

    assert (refused.status_code, refused.json()["problems"]) == (
        422,
        ["$.layers[0].members[0]: this organization has no person 'erin'",
         "$.overrides[0].person: this organization has no person 'zoe'"],
    )  # fmt: skip
    assert OnCallSchedule.get_or_none(key="nights") is None


def test_an_escalation_policy_names_people_and_schedules_by_key_and_each_must_be_reachable(service, writer):
    made(service, writer, "/people", "/schedules")
    posted = call(service, "POST", "/escalation-policies", writer, PAGING)
    assert posted.status_code == 201, posted.text
    assert posted.headers["location"] == "/api/v1/escalation-policies/paging"
    assert posted.json() == {
        "key": "paging",
        "name": "paging",
        "levels": [
            {"targets": [{"schedule": "nights"}], "wait": "5m"},
            {"targets": [{"person": "erin"}], "wait": "30m"},
        ],
        "repeat": 1,
        "contact": ["sms", "email", "push"],
        "ack_reminder": None,
    }
    row = EscalationPolicy.get(key="paging")
    second = {"targets": [{"person": "erin"}], "wait_seconds": 1800}
    assert (row.owner, row.levels[1], row.ack_reminder_seconds) == ("api", second, None)
    listed = call(service, "GET", "/escalation-policies", writer).json()
    assert [p["key"] for p in listed["escalation_policies"]] == ["default", "paging"]

    unknown = call(service, "PATCH", "/escalation-policies/paging", writer,
                   {"levels": [{"targets": [{"person": "zoe"}, {"schedule": "days"}]}]})  # fmt: skip
    by_email = call(service, "PATCH", "/escalation-policies/paging", writer, {"contact": ["email"]})

    assert (unknown.status_code, unknown.json()["problems"]) == (
        422,
        ["$.levels[0].targets[0].person: this organization has no person 'zoe'",
         "$.levels[0].targets[1].schedule: this organization has no schedule 'days'"],
    )  # fmt: skip
    assert (by_email.status_code, by_email.json()["problems"]) == (
        422,
        ["$.contact: pages 'erin' (through the schedule nights) by email, but 'erin' has no email: give them one, "
         "or add a channel they have to contact"],
    )  # fmt: skip
    reminded = call(service, "PATCH", "/escalation-policies/paging", writer, {"ack_reminder": "2h"})
    assert (reminded.status_code, reminded.json()["ack_reminder"]) == (200, "2h")
    assert EscalationPolicy.get(key="paging").version == 2


def test_a_person_or_a_schedule_that_a_policy_could_no_longer_reach_is_refused(service, writer):
    made(service, writer, "/people")
    solo = {"key": "solo", "time_zone": "UTC", "layers": [{**NIGHTS["layers"][0], "members": ["erin"]}]}
    direct = {"key": "direct", "levels": [{"targets": [{"schedule": "solo"}]}], "contact": ["sms", "push"]}
    for path, body in (("/people", {"key": "fay", "name": "Fay", "email": "fay@acme.example"}),
                       ("/schedules", solo), ("/escalation-policies", direct)):  # fmt: skip
        assert call(service, "POST", path, writer, body).status_code == 201
    fay = {**NIGHTS["overrides"][0], "person": "fay"}

    unreached = call(service, "PATCH", "/people/erin", writer, {"phone": None, "push": None, "email": "e@acme.example"})
    joined = call(service, "PATCH", "/schedules/solo", writer, {"overrides": [fay]})

    said = (
        "$: the escalation policy 'direct' pages {0!r} (through the schedule solo) by sms, push, but {0!r} has no "
        "phone or push: give them one, or add a channel they have to contact"
    )
    assert (unreached.status_code, unreached.json()["problems"]) == (422, [said.format("erin")])
    assert (joined.status_code, joined.json()["problems"]) == (422, [said.format("fay")])
    erin, schedule = Person.get(key="erin"), OnCallSchedule.get(key="solo")
    assert (erin.phone, erin.version, schedule.overrides, schedule.version) == ("+14155550104", 1, [], 1)


def test_what_a_schedule_a_policy_or_an_alert_source_names_is_not_deleted(service, writer, acme):
    made(service, writer, "/people", "/schedules", "/escalation-policies")
    AlertSource.create(organization=acme, key="app", name="App", kind="events", token_sha256=b"x" * 32,
                       routes=[{"match": {}, "policy": "paging"}])  # fmt: skip
    assert call(service, "PATCH", "/components/api", writer, {"escalation_policy": "paging"}).status_code == 409
    Component.update(owner="api").execute()
    assert call(service, "PATCH", "/components/api", writer, {"escalation_policy": "paging"}).status_code == 200

    paths = ("/people/erin", "/schedules/nights", "/escalation-policies/paging")

    refused = [call(service, "DELETE", path, writer) for path in paths]

    assert [(a.status_code, a.json()["error"]) for a in refused] == [
        (
            409,
            "person 'erin' is named by the schedule 'nights' and the escalation policy 'paging': "
            "change or delete them first",
        ),
        (409, "schedule 'nights' is named by the escalation policy 'paging': change or delete them first"),
        (409, "escalation policy 'paging' is named by the alert source 'app': change or delete them first"),
    ]
    AlertSource.delete().execute()
    assert call(service, "DELETE", "/escalation-policies/paging", writer).status_code == 204
    assert Component.get(key="api").escalation_policy_id is None  # the database's SET NULL, as a prune's
    assert call(service, "DELETE", "/schedules/nights", writer).status_code == 204
    assert call(service, "DELETE", "/people/erin", writer).status_code == 204


def test_what_the_file_made_is_refused_until_it_is_released(service, writer, acme):
    said = "acme/{0} is declared by the configuration file: change it there, or release it with "
    said += "`pulse {1} release acme {0}`"
    answers = [
        call(service, "PATCH", "/people/alice", writer, {"name": "Alice B."}),
        call(service, "DELETE", "/schedules/primary", writer),
        call(service, "PUT", "/escalation-policies/default", writer, {"levels": [{"targets": [{"person": "bob"}]}]}),
    ]
    exists = call(service, "POST", "/people", writer, {"key": "bob", "name": "Bob", "email": "b@acme.example"})

    assert [(a.status_code, a.json()["error"]) for a in answers] == [
        (409, said.format("alice", "people")),
        (409, said.format("primary", "schedules")),
        (409, said.format("default", "escalation-policies")),
    ]
    assert (exists.status_code, exists.json()["error"]) == (
        409, "person 'bob' exists: PUT or PATCH /api/v1/people/bob changes it"
    )  # fmt: skip

    owned = (("people", "alice"), ("schedules", "primary"), ("escalation-policies", "default"))
    released = [pulse(plural, "release", "acme", key) for plural, key in owned]
    assert [r.returncode for r in released] == [0, 0, 0], [r.stderr for r in released]
    assert (
        pulse("escalation-policies", "release", "acme", "default").stdout.strip() == "acme/default is the API's already"
    )
    assert pulse("people", "release", "acme", "zoe").returncode == 2
    assert call(service, "PATCH", "/people/alice", writer, {"name": "Alice B."}).status_code == 200
    by_bob = {"levels": [{"targets": [{"person": "bob"}]}], "contact": ["email"]}
    assert call(service, "PUT", "/escalation-policies/default", writer, by_bob).status_code == 200
    assert [(r.object_type, r.object_key) for r in ApiAudit.select().where(ApiAudit.action == "release")] == [
        ("person", "alice"), ("schedule", "primary"), ("escalation policy", "default")
    ]  # fmt: skip


def test_apply_leaves_the_apis_on_call_alone_until_the_file_names_it(service, writer):
    made(service, writer, "/people", "/schedules", "/escalation-policies")

    report = configfile.apply(configfile.load(FILE.replace("escalation_policy: default", "")), prune=True)

    assert (report.people_deleted, report.schedules_deleted, report.escalation_policies_deleted) == (0, 0, 0)
    bare = FILE.split("    people:")[0] + "    components: []\n"
    report = configfile.apply(configfile.load(bare), prune=True)
    assert (report.people_deleted, report.schedules_deleted, report.escalation_policies_deleted) == (2, 1, 1)
    assert [(p.key, p.owner) for p in Person.select()] == [("erin", "api")]
    assert [s.key for s in OnCallSchedule.select()] == ["nights"]
    assert [p.key for p in EscalationPolicy.select()] == ["paging"]

    naming = bare.replace(
        "    components: []\n", "    people:\n      - {key: erin, name: Erin, email: erin@acme.example}\n"
    )
    configfile.apply(configfile.load(naming), prune=True)
    erin = Person.get(key="erin")
    assert (erin.email, erin.phone, erin.push, erin.owner, erin.version) == ("erin@acme.example", None, None, "file", 2)
    assert call(service, "PATCH", "/people/erin", writer, {"name": "E."}).status_code == 409


def test_a_page_reads_the_schedule_the_api_wrote(service, writer, acme):
    made(service, writer, "/people", "/schedules")
    now = utcnow()
    hour = timedelta(hours=1)
    override = {"person": "erin", "from": (now - hour).isoformat(), "until": (now + hour).isoformat()}
    level = {"targets": [{"schedule": "nights"}]}

    assert call(service, "PATCH", "/schedules/nights", writer, {"overrides": [override]}).status_code == 200

    pages, notes = paging.targets(acme.id, level, ["sms", "push"], now)
    assert ([(p.person, p.channels) for p in pages], notes) == ([("erin", ("sms", "push"))], [])
    deleted = call(service, "DELETE", "/schedules/nights", writer)
    assert (deleted.status_code, paging.targets(acme.id, level, ["sms"], now)) == (
        204, ([], ["the schedule nights no longer exists"])
    )  # fmt: skip
