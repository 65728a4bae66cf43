"""Alert sources through the API, on the real service (`pulse serve`'s routes, on loopback): made,
read, replaced, patched and deleted by the configuration file's spec, their token and signing
secret written and never answered, logged, audited nor quoted in a problem (the token kept as its
digest, and kept by a PATCH or PUT without one); a source made here taking alerts at once and a
deleted one refusing them; 422 naming each problem's path (an escalation policy the organization
does not have), 409 for one the file made until it is released, `pulse apply --prune` leaving the
API's alone until a file names it."""

import logging

import pytest
import requests

from pulse import configfile
from pulse.api.tokens import create
from pulse.inbound.tokens import digest
from pulse.models import AlertEvent, AlertSource, ApiAudit, Organization
from pulse.sources.signature import sign
from tests.sources import bodies
from tests.support.cli import pulse
from tests.support.serve import call

FILE_TOKEN = "pr0metheus-t0ken-s3cr3t-0123456789"
TOKEN = "gr4fana-t0ken-s3cr3t-0123456789abc"
NEW_TOKEN = "n3w-gr4fana-t0ken-s3cr3t-01234567"
SIGNING = "s1gning-s3cr3t-0123456789"
SECRETS = ("t0ken-s3cr3t", "s1gning-s3cr3t")
FILE = """
organizations:
  - slug: acme
    name: Acme Inc.
    people:
      - {key: carol, name: Carol, email: carol@acme.example}
    escalation_policies:
      - {key: default, levels: [{targets: [{person: carol}], wait: 5m}], contact: [email]}
      - {key: dba, levels: [{targets: [{person: carol}], wait: 5m}], contact: [email]}
    alert_sources:
      - {key: prometheus, kind: alertmanager, token: "${PROMETHEUS_TOKEN}", escalation_policy: default}
"""
GRAFANA = {
    "key": "grafana",
    "name": "Grafana",
    "kind": "grafana",
    "token": TOKEN,
    "escalation_policy": "default",
    "routes": [{"match": {"team": "database"}, "escalation_policy": "dba"}],
    "signature": {"secret": SIGNING},
}


@pytest.fixture
def acme(database, monkeypatch):
    """acme as a file declares it: one person, escalation policies default and dba, the
    alertmanager source prometheus."""
    monkeypatch.setenv("PROMETHEUS_TOKEN", FILE_TOKEN)
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


def alert(service, token, *, secret=SIGNING):
    """A Grafana alert sent to ``/alerts/grafana`` with ``token``, signed with ``secret``."""
    body = bodies.grafana()
    headers = {"Authorization": f"Bearer {token}", "X-Grafana-Alerting-Signature": sign(secret, body)}
    return requests.post(f"http://127.0.0.1:{service.port}/alerts/grafana", data=body, headers=headers, timeout=10)


def test_a_source_is_made_read_patched_replaced_and_deleted_and_takes_alerts_at_once(service, writer, caplog):
    caplog.set_level(logging.INFO)
    made = call(service, "POST", "/alert-sources", writer, GRAFANA)
    read = call(service, "GET", "/alert-sources/grafana", writer)
    taken = alert(service, TOKEN)

    assert made.status_code == 201, made.text
    assert made.headers["location"] == "/api/v1/alert-sources/grafana"
    row = AlertSource.get(key="grafana")
    assert made.headers["etag"] == read.headers["etag"] == f'"{row.id}.1"'
    assert (
        made.json()
        == read.json()
        == {
            "key": "grafana",
            "name": "Grafana",
            "kind": "grafana",
            "escalation_policy": "default",
            "routes": [{"match": {"team": "database"}, "escalation_policy": "dba"}],
            "signature": {"header": "X-Grafana-Alerting-Signature", "timestamp_header": None},
        }
    )
    assert (row.owner, row.token_sha256, row.signature["secret"]) == ("api", digest(TOKEN), SIGNING)
    assert taken.status_code == 200 and AlertEvent.get().source_id == row.id
    assert alert(service, TOKEN, secret="an0ther-s3cret-0123456789").status_code == 401

    patched = call(
        service, "PATCH", "/alert-sources/grafana", writer,
        {"routes": [], "signature": {"timestamp_header": "X-Grafana-Alerting-Timestamp"}},
    )  # fmt: skip
    assert patched.status_code == 200, patched.text
    assert patched.json()["routes"] == [] and patched.json()["signature"]["timestamp_header"] is not None
    row = AlertSource.get(key="grafana")
    assert (row.token_sha256, row.signature["secret"], row.version) == (digest(TOKEN), SIGNING, 2)

    unsigned = call(service, "PATCH", "/alert-sources/grafana", writer, {"signature": None, "token": NEW_TOKEN})
    assert (unsigned.status_code, unsigned.json()["signature"]) == (200, None)
    assert [alert(service, t, secret="").status_code for t in (TOKEN, NEW_TOKEN)] == [404, 200]

    replaced = call(
        service, "PUT", "/alert-sources/grafana", writer, {"kind": "events", "escalation_policy": "dba"},
        **{"If-Match": unsigned.headers["etag"]},
    )  # fmt: skip
    assert replaced.status_code == 200, replaced.text
    row = AlertSource.get(key="grafana")
    assert (row.kind, row.name, row.routes, row.token_sha256) == (
        "events", "grafana", [{"match": {}, "policy": "dba"}], digest(NEW_TOKEN)
    )  # fmt: skip

    deleted = call(service, "DELETE", "/alert-sources/grafana", writer)
    assert (deleted.status_code, deleted.text) == (204, "")
    assert call(service, "GET", "/alert-sources/grafana", writer).status_code == 404
    sent = requests.post(
        f"http://127.0.0.1:{service.port}/alerts/events", data=bodies.event(),
        headers={"Authorization": f"Bearer {NEW_TOKEN}"}, timeout=10,
    )  # fmt: skip
    assert sent.status_code == 404 and AlertEvent.select().count() == 0  # its events went with it
    assert secretless(made, read, patched, unsigned, replaced)
    for secret in (*SECRETS, writer):
        assert secret not in caplog.text


def test_sources_are_listed_by_key_a_page_at_a_time_filtered_by_kind(service, writer):
    call(service, "POST", "/alert-sources", writer, GRAFANA)
    call(service, "POST", "/alert-sources", writer, {**GRAFANA, "key": "app", "kind": "events", "token": NEW_TOKEN,
                                                     "signature": None})  # fmt: skip

    first = call(service, "GET", "/alert-sources?limit=2", writer)
    second = call(service, "GET", f"/alert-sources?limit=2&cursor={first.json()['next_cursor']}", writer)
    grafanas = call(service, "GET", "/alert-sources?kind=grafana", writer)

    assert [s["key"] for s in first.json()["alert_sources"]] == ["app", "grafana"]
    assert [s["key"] for s in second.json()["alert_sources"]] == ["prometheus"]
    assert second.json()["alert_sources"][0]["signature"] is None and second.json()["next_cursor"] is None
    assert [s["key"] for s in grafanas.json()["alert_sources"]] == ["grafana"]
    assert call(service, "GET", "/alert-sources?kind=nagios", writer).status_code == 400
    assert secretless(first, second, grafanas)


def test_an_invalid_source_is_refused_with_each_problems_path_and_no_secret(service, writer):
    answers = {
        "token": call(service, "POST", "/alert-sources", writer, {**GRAFANA, "token": None}),
        "short": call(service, "POST", "/alert-sources", writer, {**GRAFANA, "token": "t0ken-s3cr3t"}),
        "policies": call(
            service, "POST", "/alert-sources", writer,
            {**GRAFANA, "escalation_policy": "nope", "routes": [*GRAFANA["routes"], {"match": {"a": "b"},
                                                                                     "escalation_policy": "gone"}]},
        ),
        "signed": call(service, "POST", "/alert-sources", writer, {**GRAFANA, "kind": "events"}),
        "secret": call(service, "POST", "/alert-sources", writer, {**GRAFANA, "signature": {"secret": "s3cr3t"}}),
        "taken": call(service, "POST", "/alert-sources", writer, {**GRAFANA, "token": FILE_TOKEN}),
    }  # fmt: skip

    assert {name: a.status_code for name, a in answers.items()} == dict.fromkeys(answers, 422)
    problems = {name: a.json()["problems"] for name, a in answers.items()}
    assert answers["token"].json()["error"] == "the alert source is not valid"
    assert problems["token"] == ["$.token: Field required"]
    assert problems["short"] == ["$.token: a token is 32 to 128 letters, digits, '-' or '_'"]
    assert problems["policies"] == [
        "$.escalation_policy: this organization has no escalation policy 'nope'",
        "$.routes[1].escalation_policy: this organization has no escalation policy 'gone'",
    ]
    assert problems["signed"] == ["$: only a grafana source takes a signature (Grafana's webhook HMAC)"]
    assert problems["secret"] == ["$.signature.secret: String should have at least 16 characters"]
    assert problems["taken"] == ["$.token: another alert source has this token"]
    assert [s.key for s in AlertSource.select()] == ["prometheus"]
    assert secretless(*answers.values())


def test_what_the_file_made_is_refused_until_it_is_released(service, writer):
    said = (
        "acme/prometheus is declared by the configuration file: change it there, "
        "or release it with `pulse alert-sources release acme prometheus`"
    )
    answers = [
        call(service, "PATCH", "/alert-sources/prometheus", writer, {"name": "Prom"}),
        call(service, "DELETE", "/alert-sources/prometheus", writer),
    ]
    exists = call(service, "POST", "/alert-sources", writer, {**GRAFANA, "key": "prometheus"})

    assert [(a.status_code, a.json()["error"]) for a in answers] == [(409, said)] * 2
    assert (exists.status_code, exists.json()["error"]) == (
        409, "alert source 'prometheus' exists: PUT or PATCH /api/v1/alert-sources/prometheus changes it"
    )  # fmt: skip

    released = pulse("alert-sources", "release", "acme", "prometheus")
    assert released.returncode == 0, released.stderr
    patched = call(service, "PATCH", "/alert-sources/prometheus", writer, {"name": "Prom"})
    assert patched.status_code == 200 and patched.json()["name"] == "Prom"
    row = AlertSource.get(key="prometheus")
    assert (row.owner, row.token_sha256) == ("api", digest(FILE_TOKEN))  # the sender's URL still works
    assert pulse("alert-sources", "release", "acme", "prometheus").stdout.strip().endswith("is the API's already")
    audited = ApiAudit.select().where(ApiAudit.action == "release")
    assert [(r.object_type, r.object_key, r.token_id) for r in audited] == [("alert source", "prometheus", None)]


def test_apply_leaves_the_apis_sources_alone_until_the_file_names_them(service, writer, monkeypatch):
    assert call(service, "POST", "/alert-sources", writer, GRAFANA).status_code == 201
    bare = FILE.split("    alert_sources:")[0]

    report = configfile.apply(configfile.load(bare), prune=True)

    assert [s.key for s in AlertSource.select()] == ["grafana"] and report.alert_sources_deleted == 1
    monkeypatch.setenv("GRAFANA_TOKEN", NEW_TOKEN)
    naming = bare + '    alert_sources:\n      - {key: grafana, kind: events, token: "${GRAFANA_TOKEN}", '
    naming += "escalation_policy: dba}\n"
    configfile.apply(configfile.load(naming), prune=True)
    taken = AlertSource.get(key="grafana")
    assert (taken.kind, taken.owner, taken.version, taken.token_sha256) == ("events", "file", 2, digest(NEW_TOKEN))
    assert call(service, "PATCH", "/alert-sources/grafana", writer, {"name": "G"}).status_code == 409


def test_another_organizations_sources_are_not_found(service, writer):
    globex = Organization.create(slug="globex", name="Globex")
    AlertSource.create(
        organization=globex, key="theirs", name="Theirs", kind="events", token_sha256=digest(NEW_TOKEN),
        routes=[{"match": {}, "policy": "default"}], owner="api",
    )  # fmt: skip

    answers = [
        call(service, "GET", "/alert-sources/theirs", writer),
        call(service, "PATCH", "/alert-sources/theirs", writer, {"name": "Ours"}),
        call(service, "DELETE", "/alert-sources/theirs", writer),
    ]

    assert [a.status_code for a in answers] == [404] * 3
    assert [s["key"] for s in call(service, "GET", "/alert-sources", writer).json()["alert_sources"]] == ["prometheus"]
    assert AlertSource.get(key="theirs").name == "Theirs"
