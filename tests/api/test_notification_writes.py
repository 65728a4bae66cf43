"""Notification channels and subscribers through the API, on the real service (`pulse serve`'s
routes, on loopback): made, read, replaced, patched and deleted by the configuration file's spec,
their secrets (a URL, a signing secret, a push subscription's keys) written and never answered,
logged, audited nor quoted in a problem, a PATCH that leaves a secret out keeping it; 422 naming
each problem's path, 409 for one the file made until it is released, `pulse apply --prune` leaving
the API's alone, 412 for a stale ETag, one object for an idempotent retry."""

import logging

import pytest
from pydantic import field_validator

from pulse import configfile
from pulse.api.resources import Resource
from pulse.api.tokens import create
from pulse.inbound.bounds import RefusedError
from pulse.models import ApiAudit, NotificationChannel, Organization, Subscriber
from pulse.spec import Strict
from tests.support.cli import pulse
from tests.support.serve import call

SLACK_URL = "https://hooks.slack.com/services/T0/B0/sl4ckPATHs3cr3t"
HOOK_URL = "https://hooks.acme.example/pulse/h00kPATHs3cr3t"
HOOK_SECRET = "sign1ngs3cr3t-0123456789"
BOB_URL = "https://bob.example/hook/b0bPATHs3cr3t"
PUSH = {
    "endpoint": "https://push.example/send/pu5hENDPOINTs3cr3t",
    "keys": {"p256dh": "B" + "p256dhs3cr3t" * 7 + "x" * 3, "auth": "au7hs3cr3t-01234"},
}
SECRETS = ("sl4ckPATHs3cr3t", "h00kPATHs3cr3t", "sign1ngs3cr3t", "b0bPATHs3cr3t", "pu5hENDPOINTs3cr3t", "p256dhs3cr3t",
           "au7hs3cr3t")  # fmt: skip
FILE = f"""
organizations:
  - slug: acme
    name: Acme Inc.
    components:
      - {{key: site, name: Web site, url: "https://www.acme.example/"}}
      - {{key: api, name: API, url: "https://api.acme.example/"}}
    channels:
      - {{key: ops-slack, type: slack, url: "{SLACK_URL}"}}
    subscribers:
      - {{email: alice@acme.example}}
      - {{webhook: "{BOB_URL}", secret: "{HOOK_SECRET}"}}
"""
HOOK = {"key": "audit", "type": "webhook", "url": HOOK_URL, "secret": HOOK_SECRET, "components": ["api"]}


@pytest.fixture
def acme(database):
    """acme as a file declares it: components site and api, channel ops-slack, two subscribers."""
    configfile.apply(configfile.load(FILE))
    return Organization.get(Organization.slug == "acme")


@pytest.fixture
def writer():
    return create("acme", ["read", "write"])[1]


def secretless(*answers):
    """Whether no answer, and no audit row, holds a secret."""
    audited = " ".join(f"{r.object_type} {r.object_key} {r.action}" for r in ApiAudit.select())
    texts = [a.text + str(dict(a.headers)) for a in answers] + [audited]
    return not [secret for secret in SECRETS for text in texts if secret in text]


def test_a_channel_is_made_read_patched_replaced_and_deleted_and_its_secrets_never_answered(service, writer, caplog):
    caplog.set_level(logging.INFO)
    made = call(service, "POST", "/channels", writer, HOOK)
    read = call(service, "GET", "/channels/audit", writer)

    assert made.status_code == 201, made.text
    assert made.headers["location"] == "/api/v1/channels/audit"
    row = NotificationChannel.get(key="audit")
    assert made.headers["etag"] == read.headers["etag"] == f'"{row.id}.1"'
    assert made.json() == read.json()
    fingerprint = read.json()["destination"]
    assert read.json() == {
        "key": "audit",
        "type": "webhook",
        "enabled": True,
        "events": [],
        "components": ["api"],
        "to": None,
        "destination": fingerprint,
        "signed": True,
    }
    assert fingerprint.startswith("hooks.acme.example #") and len(fingerprint) == len("hooks.acme.example #") + 8
    assert (row.owner, row.settings) == ("api", {"url": HOOK_URL, "secret": HOOK_SECRET})

    patched = call(service, "PATCH", "/channels/audit", writer, {"events": ["incident.opened"], "enabled": False})
    row = NotificationChannel.get(key="audit")
    assert patched.status_code == 200, patched.text
    assert (row.settings, row.events, row.enabled, row.version) == (
        {"url": HOOK_URL, "secret": HOOK_SECRET}, ["incident.opened"], False, 2
    )  # fmt: skip

    unsigned = call(service, "PATCH", "/channels/audit", writer, {"secret": None})
    assert (unsigned.status_code, unsigned.json()["signed"]) == (200, False)
    assert NotificationChannel.get(key="audit").settings == {"url": HOOK_URL}

    replaced = call(
        service, "PUT", "/channels/audit", writer, {"type": "email", "to": "ops@acme.example"},
        **{"If-Match": unsigned.headers["etag"]},
    )  # fmt: skip
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["to"] == ["ops@acme.example"] and replaced.json()["destination"] is None
    row = NotificationChannel.get(key="audit")
    assert (row.type, row.settings, row.events, row.component_ids) == ("email", {"to": ["ops@acme.example"]}, [], [])

    deleted = call(service, "DELETE", "/channels/audit", writer)
    assert (deleted.status_code, deleted.text) == (204, "")
    assert call(service, "GET", "/channels/audit", writer).status_code == 404
    assert secretless(made, read, patched, unsigned, replaced)
    for secret in (*SECRETS, writer):
        assert secret not in caplog.text


def test_channels_are_listed_by_key_a_page_at_a_time_filtered_by_type(service, writer):
    call(service, "POST", "/channels", writer, {"key": "pager", "type": "sms", "to": "+15551234567"})
    call(service, "POST", "/channels", writer, HOOK)

    first = call(service, "GET", "/channels?limit=2", writer)
    second = call(service, "GET", f"/channels?limit=2&cursor={first.json()['next_cursor']}", writer)
    slack = call(service, "GET", "/channels?type=slack", writer)

    assert [c["key"] for c in first.json()["channels"]] == ["audit", "ops-slack"]
    assert [c["key"] for c in second.json()["channels"]] == ["pager"]
    assert second.json()["channels"][0]["to"] == "+15551234567" and second.json()["next_cursor"] is None
    assert [c["key"] for c in slack.json()["channels"]] == ["ops-slack"]
    assert slack.json()["channels"][0]["destination"].startswith("hooks.slack.com #")
    assert call(service, "GET", "/channels?type=pigeon", writer).status_code == 400
    assert secretless(first, second, slack)


def test_a_subscriber_is_named_by_its_id_and_its_secrets_never_answered(service, writer):
    made = call(service, "POST", "/subscribers", writer, {"webhook": HOOK_URL, "secret": HOOK_SECRET})
    number = Subscriber.get(address=HOOK_URL).id
    read = call(service, "GET", f"/subscribers/{number}", writer)
    patched = call(service, "PATCH", f"/subscribers/{number}", writer, {"components": ["site"]})

    assert made.status_code == 201, made.text
    assert made.headers["location"] == f"/api/v1/subscribers/{number}"
    assert made.json() == read.json()
    assert read.json() | {"created_at": None} == {
        "id": number,
        "kind": "webhook",
        "address": read.json()["address"],
        "events": [],
        "components": [],
        "signed": True,
        "gone_at": None,
        "created_at": None,
    }
    assert read.json()["address"].startswith("hooks.acme.example #")
    assert patched.status_code == 200 and patched.json()["components"] == ["site"]
    row = Subscriber.get_by_id(number)
    assert (row.owner, row.settings, row.version) == ("api", {"secret": HOOK_SECRET}, 2)

    Subscriber.update(gone_at=row.created_at).where(Subscriber.id == number).execute()
    kept = call(service, "PATCH", f"/subscribers/{number}", writer, {"events": ["incident.opened"]})
    moved = call(service, "PATCH", f"/subscribers/{number}", writer, {"webhook": None, "secret": None, "push": PUSH})
    assert kept.json()["gone_at"] is not None
    assert moved.status_code == 200, moved.text
    assert (moved.json()["kind"], moved.json()["gone_at"]) == ("push", None)
    row = Subscriber.get_by_id(number)
    assert (row.kind, row.address, row.settings) == ("push", PUSH["endpoint"], {"keys": PUSH["keys"]})
    assert call(service, "PATCH", f"/subscribers/{number}", writer, {"events": []}).status_code == 200
    assert Subscriber.get_by_id(number).settings == {"keys": PUSH["keys"]}  # a PATCH without them keeps them

    emails = call(service, "GET", "/subscribers?kind=email", writer)
    assert [(s["kind"], s["address"]) for s in emails.json()["subscribers"]] == [("email", "alice@acme.example")]
    first = call(service, "GET", "/subscribers?limit=2", writer)
    second = call(service, "GET", f"/subscribers?limit=2&cursor={first.json()['next_cursor']}", writer)
    listed = [s["id"] for s in first.json()["subscribers"] + second.json()["subscribers"]]
    assert listed == sorted(s.id for s in Subscriber.select()) and second.json()["next_cursor"] is None

    deleted = call(service, "DELETE", f"/subscribers/{number}", writer)
    assert deleted.status_code == 204 and Subscriber.get_or_none(id=number) is None
    assert call(service, "GET", "/subscribers/nope", writer).status_code == 404
    assert secretless(made, read, patched, kept, moved, emails, first, second)


def test_an_invalid_channel_or_subscriber_is_refused_with_each_problems_path_and_no_secret(service, writer):
    answers = {
        "needs": call(service, "POST", "/channels", writer, {"key": "s", "type": "slack"}),
        "url": call(service, "POST", "/channels", writer, {"key": "s", "type": "slack", "url": "ftp://sl4ckPATHs3cr3t"}),
        "short": call(service, "POST", "/channels", writer, {**HOOK, "secret": "sign1ngs3cr3t", "colour": 1}),
        "unknown": call(service, "POST", "/channels", writer, {**HOOK, "components": ["api", "nope"]}),
        "two": call(service, "POST", "/subscribers", writer, {"email": "bob@acme.example", "phone": "+15551234567"}),
        "email": call(service, "POST", "/subscribers", writer, {"email": "bob"}),
        "push": call(service, "POST", "/subscribers", writer, {"push": {**PUSH, "keys": {"auth": "au7hs3cr3t"}}}),
    }  # fmt: skip

    assert {name: a.status_code for name, a in answers.items()} == dict.fromkeys(answers, 422)
    problems = {name: a.json()["problems"] for name, a in answers.items()}
    assert answers["needs"].json()["error"] == "the channel is not valid"
    assert problems["needs"] == ["$: a slack channel needs url"]
    assert problems["url"] == ["$.url: must be an http:// or https:// URL with a host"]
    assert problems["short"] == ["$.secret: String should have at least 16 characters", "$.colour: unknown field"]
    assert problems["unknown"] == ["$.components[1]: this organization has no component 'nope'"]
    assert answers["two"].json()["error"] == "the subscriber is not valid"
    assert problems["two"] == ["$: a subscriber has exactly one of email, phone, webhook or push"]
    assert problems["email"] == ["$: 'bob' is not an email address"]
    assert problems["push"] == [
        "$.push.keys.p256dh: Field required",
        "$.push.keys.auth: String should have at least 16 characters",
    ]
    assert NotificationChannel.select().count() == 1 and Subscriber.select().count() == 2
    assert secretless(*answers.values())


def test_a_patch_is_validated_whole_without_quoting_the_secrets_it_read_back(service, writer):
    call(service, "POST", "/channels", writer, HOOK)

    refused = call(service, "PATCH", "/channels/audit", writer, {"type": "email", "to": ["ops@acme.example"]})
    changed = call(
        service, "PATCH", "/channels/audit", writer, {"type": "email", "to": ["ops@acme.example"], "url": None,
                                                       "secret": None},
    )  # fmt: skip

    assert refused.status_code == 422
    assert refused.json()["problems"] == ["$: a email channel does not take secret, url"]  # the file says it so too
    assert changed.status_code == 200, changed.text
    assert NotificationChannel.get(key="audit").settings == {"to": ["ops@acme.example"]}
    assert secretless(refused, changed)


class _Quoting(Strict):
    token: str

    @field_validator("token")
    @classmethod
    def _refused(cls, value: str) -> str:
        raise ValueError(f"{value!r} is refused")


def test_a_problem_never_quotes_a_secret_the_body_gives():
    resource = Resource(
        name="thing", plural="things", model=None, identifier="key", spec=_Quoting, show=list, document=dict,
        view=dict, page=dict, write=lambda *_: 0, existing=lambda *_: None, secrets=("token",),
    )  # fmt: skip

    with pytest.raises(RefusedError) as refused:
        resource._spec({"token": "t0ken-s3cr3t\n"})

    assert refused.value.body == {"error": "the thing is not valid", "problems": ["$.token: '***' is refused"]}


def test_what_the_file_made_is_refused_until_it_is_released(service, writer, acme):
    bob = Subscriber.get(kind="webhook").id
    said = (
        "acme/{} is declared by the configuration file: change it there, or release it with `pulse {} release acme {}`"
    )
    answers = [
        call(service, "PATCH", "/channels/ops-slack", writer, {"enabled": False}),
        call(service, "DELETE", "/channels/ops-slack", writer),
        call(service, "PUT", f"/subscribers/{bob}", writer, {"webhook": HOOK_URL}),
        call(service, "DELETE", f"/subscribers/{bob}", writer),
    ]
    exists = call(service, "POST", "/channels", writer, {"key": "ops-slack", "type": "slack", "url": SLACK_URL})
    twin = call(service, "POST", "/subscribers", writer, {"webhook": BOB_URL})

    assert [(a.status_code, a.json()["error"]) for a in answers] == [
        (409, said.format("ops-slack", "channels", "ops-slack")),
        (409, said.format("ops-slack", "channels", "ops-slack")),
        (409, said.format(bob, "subscribers", bob)),
        (409, said.format(bob, "subscribers", bob)),
    ]
    assert (exists.status_code, exists.json()["error"]) == (
        409, "channel 'ops-slack' exists: PUT or PATCH /api/v1/channels/ops-slack changes it"
    )  # fmt: skip
    assert (twin.status_code, twin.json()["error"]) == (
        409, f"subscriber {bob} exists: PUT or PATCH /api/v1/subscribers/{bob} changes it"
    )  # fmt: skip
    assert NotificationChannel.get(key="ops-slack").enabled

    released = [pulse("channels", "release", "acme", "ops-slack"), pulse("subscribers", "release", "acme", str(bob))]
    assert [r.returncode for r in released] == [0, 0], [r.stderr for r in released]
    patched = call(service, "PATCH", "/channels/ops-slack", writer, {"enabled": False})
    deleted = call(service, "DELETE", f"/subscribers/{bob}", writer)
    assert (patched.status_code, deleted.status_code) == (200, 204)
    assert NotificationChannel.get(key="ops-slack").owner == "api"
    assert pulse("subscribers", "release", "acme", "x").returncode == 2
    assert (
        pulse("channels", "release", "acme", "nope").stderr.strip().endswith("no channel 'nope' in organization 'acme'")
    )
    assert [(r.action, r.object_type, r.token_id) for r in ApiAudit.select().where(ApiAudit.action == "release")] == [
        ("release", "channel", None),
        ("release", "subscriber", None),
    ]
    assert secretless(*answers, exists, twin, patched)


def test_apply_leaves_the_apis_channels_and_subscribers_alone_until_the_file_names_them(service, writer):
    made = call(service, "POST", "/channels", writer, HOOK)
    carol = call(service, "POST", "/subscribers", writer, {"email": "carol@acme.example"})
    assert (made.status_code, carol.status_code) == (201, 201)
    bare = FILE.split("    channels:")[0]

    report = configfile.apply(configfile.load(bare), prune=True)

    assert [c.key for c in NotificationChannel.select()] == ["audit"]
    assert [s.address for s in Subscriber.select()] == ["carol@acme.example"]
    assert (report.channels_deleted, report.subscribers_deleted) == (1, 2)  # the file's own
    naming = bare + '    channels:\n      - {key: audit, type: email, to: "ops@acme.example"}\n'
    naming += "    subscribers:\n      - {email: carol@acme.example, events: [incident.opened]}\n"
    configfile.apply(configfile.load(naming), prune=True)
    taken = NotificationChannel.get(key="audit")
    carol_row = Subscriber.get(address="carol@acme.example")
    assert (taken.type, taken.owner, taken.version) == ("email", "file", 2)
    assert (carol_row.events, carol_row.owner, carol_row.version) == (["incident.opened"], "file", 2)
    assert call(service, "PATCH", "/channels/audit", writer, {"enabled": False}).status_code == 409
    assert call(service, "DELETE", f"/subscribers/{carol_row.id}", writer).status_code == 409


def test_a_stale_etag_is_refused(service, writer):
    made = call(service, "POST", "/subscribers", writer, {"email": "carol@acme.example"})
    path = made.headers["location"].removeprefix("/api/v1")
    stale = made.headers["etag"]
    call(service, "PATCH", path, writer, {"events": ["incident.opened"]}, **{"If-Match": stale})

    lost = call(service, "PATCH", path, writer, {"events": []}, **{"If-Match": stale})
    gone = call(service, "DELETE", path, writer, **{"If-Match": stale})
    channel = call(service, "POST", "/channels", writer, HOOK)
    call(service, "PATCH", "/channels/audit", writer, {"enabled": False})
    late = call(service, "PUT", "/channels/audit", writer, HOOK, **{"If-Match": channel.headers["etag"]})

    current = call(service, "GET", path, writer).headers["etag"]
    number = path.rpartition("/")[2]
    assert [a.status_code for a in (lost, gone, late)] == [412] * 3
    assert lost.json() == {"error": f"subscriber {number} changed since that ETag: it is now {current} (GET it again)"}
    assert Subscriber.get_by_id(int(number)).events == ["incident.opened"]
    assert not NotificationChannel.get(key="audit").enabled


def test_an_idempotent_retry_makes_one_subscriber_and_the_audit_names_it_by_id(service, writer):
    key = {"Idempotency-Key": "bob-1"}
    body = {"webhook": HOOK_URL, "secret": HOOK_SECRET}

    first = call(service, "POST", "/subscribers", writer, body, **key)
    retry = call(service, "POST", "/subscribers", writer, dict(reversed(body.items())), **key)
    plain = call(service, "POST", "/subscribers", writer, body)

    assert (first.status_code, retry.status_code, plain.status_code) == (201, 201, 409)
    assert retry.text == first.text and retry.headers["idempotent-replayed"] == "true"
    assert Subscriber.select().where(Subscriber.address == HOOK_URL).count() == 1
    number = str(first.json()["id"])
    audited = [(r.action, r.object_type, r.object_key, r.status) for r in ApiAudit.select().order_by(ApiAudit.id)]
    assert audited == [("create", "subscriber", number, 201)] * 2 + [("create", "subscriber", "", 409)]
    assert secretless(first, retry, plain)


def test_another_organizations_channels_and_subscribers_are_not_found(service, writer):
    globex = Organization.create(slug="globex", name="Globex")
    NotificationChannel.create(
        organization=globex, key="theirs", type="slack", settings={"url": SLACK_URL}, owner="api"
    )
    theirs = Subscriber.create(organization=globex, kind="email", address="x@globex.example", owner="api")

    answers = [
        call(service, "GET", "/channels/theirs", writer),
        call(service, "PATCH", "/channels/theirs", writer, {"enabled": False}),
        call(service, "GET", f"/subscribers/{theirs.id}", writer),
        call(service, "DELETE", f"/subscribers/{theirs.id}", writer),
    ]
    listed = call(service, "GET", "/subscribers", writer)

    assert [a.status_code for a in answers] == [404] * 4
    assert "x@globex.example" not in listed.text
    assert Subscriber.get_by_id(theirs.id).address == "x@globex.example"
