"""The API's writes on the real service (`pulse serve`'s routes, on loopback): components made,
replaced, patched and deleted by the configuration file's spec, 422 naming each problem's path,
409 for a component the file made until it is released, `pulse apply --prune` leaving the API's
alone, one component for an idempotent retry, 412 for a stale ETag, an audit row per write, and no
secret in an answer or a log line."""

import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests

from pulse import configfile
from pulse.api.tokens import create
from pulse.models import ApiAudit, ApiIdempotency, Component, HeartbeatMonitor, MaintenanceWindow, Organization
from tests.support.certs import Authority
from tests.support.cli import pulse
from tests.support.serve import call, running
from tests.support.wait import wait_for

FILE = """
organizations:
  - slug: acme
    name: Acme Inc.
    components:
      - {key: site, name: Web site, url: "https://www.acme.example/"}
"""
HTTP = {
    "key": "api",
    "name": "Public API",
    "url": "https://api.acme.example/health?key=k3y",
    "headers": {"Authorization": "Bearer s3cr3t", "X-Trace": "hunter2"},
    "body": '{"password": "p4yload"}',
    "method": "post",
    "interval": "30s",
    "conditions": ["[STATUS] == 200"],
}
SECRETS = ("s3cr3t", "hunter2", "k3y", "p4yload")


@pytest.fixture
def acme(database):
    """acme as a file declares it: one component, ``site``."""
    configfile.apply(configfile.load(FILE))
    return Organization.get(Organization.slug == "acme")


@pytest.fixture
def authority(tmp_path):
    return Authority(tmp_path)


@pytest.fixture
def writer():
    return create("acme", ["read", "write"])[1]


def test_a_component_is_made_read_replaced_patched_and_deleted(service, writer, caplog):
    caplog.set_level(logging.INFO)
    made = call(service, "POST", "/components", writer, HTTP)
    read = call(service, "GET", "/components/api", writer)

    assert made.status_code == 201, made.text
    assert made.headers["location"] == "/api/v1/components/api"
    assert made.json() == read.json()
    assert made.headers["etag"] == read.headers["etag"] == f'"{Component.get(key="api").id}.1"'
    assert read.json()["check"] == {
        "url": "https://api.acme.example/health",
        "method": "POST",
        "header_names": ["Authorization", "X-Trace"],
        "forward_headers": False,
        "own_ca": False,
    }
    row = Component.get(key="api")
    assert (row.owner, row.headers["Authorization"], row.interval_seconds) == ("api", "Bearer s3cr3t", 30)

    replaced = call(
        service, "PUT", "/components/api", writer, {"name": "API", "url": "https://api.acme.example/v2"},
        **{"If-Match": made.headers["etag"]},
    )  # fmt: skip
    assert replaced.status_code == 200, replaced.text
    row = Component.get(key="api")
    assert (row.name, row.method, row.headers, row.body, row.interval_seconds) == ("API", "GET", {}, None, 60)

    patch = {"interval": "2m", "headers": {"X-Trace": "hunter2"}, "maintenance": [
        {"start": "2027-01-01T00:00:00Z", "end": "2027-01-01T01:00:00Z", "title": "move"}]}  # fmt: skip
    patched = call(
        service, "PATCH", "/components/api", writer, patch, **{"Content-Type": "application/merge-patch+json"}
    )
    again = call(service, "PATCH", "/components/api", writer, {"headers": {"X-Trace": None, "X-Other": "1"}})
    assert patched.status_code == again.status_code == 200, patched.text
    row = Component.get(key="api")
    assert (row.name, row.interval_seconds, row.headers, row.version) == ("API", 120, {"X-Other": "1"}, 4)
    assert MaintenanceWindow.get(component=row.id).title == "move"
    assert again.headers["etag"] == f'"{row.id}.4"'

    deleted = call(service, "DELETE", "/components/api", writer)
    assert (deleted.status_code, deleted.text) == (204, "")
    assert call(service, "GET", "/components/api", writer).status_code == 404
    for answer in (made, read, replaced, patched, again):
        for secret in SECRETS:
            assert secret not in answer.text
    for secret in (*SECRETS, writer):
        assert secret not in caplog.text


@pytest.mark.parametrize(
    ("fields", "stored"),
    [
        ({"kind": "tcp", "host": "db.acme.example", "port": 5432, "send": "AUTH p4yload\r\n"}, "tcp"),
        ({"kind": "dns", "query": "acme.example", "record": "MX"}, "dns"),
        ({"kind": "tls", "host": "mail.acme.example", "starttls": "smtp"}, "tls"),
    ],
)
def test_every_kind_of_check_is_made_as_the_file_makes_it(service, writer, fields, stored):
    made = call(service, "POST", "/components", writer, {"key": "c", "name": "C", **fields})
    patched = call(service, "PATCH", "/components/c", writer, {"interval": 300})

    assert (made.status_code, patched.status_code) == (201, 200), made.text + patched.text
    row = Component.get(key="c")
    assert (row.kind, row.interval_seconds, row.owner) == (stored, 300, "api")
    assert "p4yload" not in made.text + patched.text


STORED = [f for f in Component._meta.sorted_field_names if f not in ("version", "updated_at", "next_check_at")]


def stored(key):
    row = Component.get(key=key)
    windows = [
        (m.starts_at, m.ends_at, m.title) for m in MaintenanceWindow.select().where(MaintenanceWindow.component == row)
    ]
    return {name: getattr(row, name) for name in STORED}, windows


@pytest.mark.parametrize(
    "fields",
    [
        {"url": "https://api.acme.example/", "headers": {"A": "b"}, "body": "x", "method": "PUT",
         "extract": {"v": "[BODY].v"}, "repeat_while_down": "1h", "certificate_warnings": ["10d"],
         "domain_warnings": ["7d"], "timeout": "2500ms",
         "maintenance": [{"start": "2027-01-01T00:00:00Z", "end": "2027-01-02T00:00:00Z", "title": "t"}]},
        {"kind": "tcp", "host": "db.acme.example", "port": 5432, "tls": True, "verify": False, "send": "x"},
        {"kind": "tcp", "host": "db.acme.example", "port": 5432, "conditions": ["[CONNECTED] == true"]},
        {"kind": "dns", "query": "acme.example", "record": "TXT", "resolver": "192.0.2.53"},
        {"kind": "tls", "host": "acme.example", "port": 8443, "locations": [], "failure_threshold": 5},
        {"type": "service", "auto_incident": False, "paused": True},
        {"type": "heartbeat", "cron": "0 3 * * *", "time_zone": "Europe/Berlin", "grace": "2h", "token": "h" * 40},
    ],
)  # fmt: skip
def test_a_patch_that_names_nothing_changes_nothing_but_the_version(service, writer, fields, authority):
    if fields.get("url"):
        fields = {**fields, "ca": authority.pem.read_text()}
    made = call(service, "POST", "/components", writer, {"key": "c", "name": "C", **fields})
    assert made.status_code == 201, made.text
    before = stored("c")
    token = {"token": fields["token"]} if "token" in fields else {}

    patched = call(service, "PATCH", "/components/c", writer, token)

    assert (made.status_code, patched.status_code) == (201, 200), made.text + patched.text
    assert stored("c") == before
    assert Component.get(key="c").version == 2


def test_a_heartbeat_is_made_and_its_token_is_never_answered(service, writer):
    token = "t" * 40
    body = {"key": "backup", "name": "Backup", "type": "heartbeat", "period": "1d", "token": token}
    made = call(service, "POST", "/components", writer, body)
    without = call(service, "PATCH", "/components/backup", writer, {"grace": "2h"})
    patched = call(service, "PATCH", "/components/backup", writer, {"grace": "2h", "token": token})
    twin = call(service, "POST", "/components", writer, {**body, "key": "twin"})

    assert made.status_code == 201 and token not in made.text
    assert (without.status_code, without.json()["problems"]) == (422, ["$: a heartbeat needs a token and has no url"])
    assert patched.status_code == 200
    assert HeartbeatMonitor.get().grace_seconds == 7200
    assert (twin.status_code, twin.json()["problems"]) == (422, ["$.token: another heartbeat has this token"])


def test_an_invalid_component_is_refused_with_the_path_of_each_problem(service, writer):
    body = {"key": "Bad Key", "name": "x", "interval": "5s", "url": "ftp://x", "colour": 1, "ca_file": "/etc/passwd"}

    refused = call(service, "POST", "/components", writer, body)
    partial = call(
        service, "POST", "/components", writer, {"key": "ok", "name": "OK", "conditions": ["[PACKET_LOSS] == 0"]}
    )

    assert refused.status_code == 422
    assert refused.json() == {
        "error": "the component is not valid",
        "problems": [
            "$.ca_file: a file is read where `pulse apply` runs, not over the API: give ca, the PEM text",
            "$.url: must be an http:// or https:// URL with a host",
            "$.key: String should match pattern '^[a-z0-9][a-z0-9_-]{0,63}$'",
            "$.interval: must be between 15s and 24h, not 5s",
            "$.colour: unknown field",
        ],
    }
    assert partial.json()["problems"] == [
        "$: an endpoint needs a url",
        "$.conditions[0]: [PACKET_LOSS] is not a placeholder of http checks (use [BODY], [CERTIFICATE_EXPIRATION], "
        "[CONNECTED], [IP], [RESPONSE_TIME], [STATUS])",
    ]
    not_json = requests.post(
        f"http://127.0.0.1:{service.port}/api/v1/components",
        data=b"{nope",
        headers={"Authorization": f"Bearer {writer}"},
        timeout=10,
    )
    listed = call(service, "POST", "/components", writer, [HTTP])
    assert (not_json.status_code, not_json.json()) == (
        400,
        {"error": "the body is not JSON: Expecting property name enclosed in double quotes (line 1, column 2)"},
    )
    assert listed.status_code == 400
    assert Component.select().count() == 1


def test_the_same_problem_is_named_alike_in_the_file_and_the_api(service, writer):
    with pytest.raises(Exception, match=r"organizations\[0\]\.components\[0\]\.interval: must be between 15s and 24h"):
        configfile.load(FILE.replace('url: "https', 'interval: 5s, url: "https'))

    refused = call(service, "POST", "/components", writer, {"key": "x", "name": "X", "url": "http://x", "interval": 5})

    assert refused.json()["problems"] == ["$.interval: must be between 15s and 24h, not 5s"]


def test_a_component_the_file_made_is_refused_until_it_is_released(service, writer):
    said = (
        "acme/site is declared by the configuration file: change it there, "
        "or release it with `pulse components release acme site`"
    )
    answers = [
        call(service, "PUT", "/components/site", writer, {"name": "Site", "url": "https://x.example/"}),
        call(service, "PATCH", "/components/site", writer, {"name": "Site"}),
        call(service, "DELETE", "/components/site", writer),
        call(service, "POST", "/components", writer, {"key": "site", "name": "S", "url": "https://x.example/"}),
    ]

    assert [(a.status_code, a.json()["error"]) for a in answers[:3]] == [(409, said)] * 3
    assert answers[3].status_code == 409
    assert Component.get(key="site").name == "Web site"

    released = pulse("components", "release", "acme", "site")
    patched = call(service, "PATCH", "/components/site", writer, {"name": "Site"})

    assert released.returncode == 0, released.stderr
    assert patched.status_code == 200, patched.text
    assert (Component.get(key="site").name, Component.get(key="site").owner) == ("Site", "api")
    assert pulse("components", "release", "acme", "nope").returncode == 2


def test_apply_leaves_the_apis_components_alone_until_the_file_names_one(service, writer):
    call(service, "POST", "/components", writer, {"key": "made", "name": "Made", "url": "https://m.example/"})
    other = FILE.replace("key: site, name: Web site", "key: other, name: Other")

    report = configfile.apply(configfile.load(other), prune=True)

    assert sorted(c.key for c in Component.select()) == ["made", "other"]
    assert report.components_deleted == 1  # site, the file's
    naming = other + '      - {key: made, name: Taken, url: "https://m.example/"}\n'
    configfile.apply(configfile.load(naming), prune=True)
    taken = Component.get(key="made")
    assert (taken.name, taken.owner) == ("Taken", "file")
    assert call(service, "PATCH", "/components/made", writer, {"name": "x"}).status_code == 409


def test_an_idempotent_retry_makes_one_component(service, writer):
    key = {"Idempotency-Key": "create-api-1"}

    first = call(service, "POST", "/components", writer, HTTP, **key)
    retry = call(service, "POST", "/components", writer, dict(reversed(HTTP.items())), **key)
    other = call(service, "POST", "/components", writer, {**HTTP, "key": "api2"}, **key)

    assert (first.status_code, retry.status_code) == (201, 201)
    assert retry.json() == first.json() and retry.headers["etag"] == first.headers["etag"]
    assert retry.headers["idempotent-replayed"] == "true" and "idempotent-replayed" not in first.headers
    assert (other.status_code, other.json()) == (
        422,
        {"error": "Keys for idempotent requests can only be used with the same parameters"},
    )
    assert Component.select().where(Component.key.in_(["api", "api2"])).count() == 1

    ApiIdempotency.update(created_at=ApiIdempotency.created_at - timedelta(hours=24)).execute()
    later = call(service, "POST", "/components", writer, {**HTTP, "key": "api2"}, **key)
    assert later.status_code == 201
    assert call(service, "POST", "/components", writer, HTTP, **{"Idempotency-Key": ""}).status_code == 400


def test_retries_sent_at_once_make_one_component(service, writer):
    def post(key):
        return call(service, "POST", "/components", writer, {**HTTP, "key": "same"}, **key)

    with ThreadPoolExecutor(4) as pool:
        retries = list(pool.map(post, [{"Idempotency-Key": "once"}] * 4))
    with ThreadPoolExecutor(4) as pool:
        plain = list(pool.map(lambda _: call(service, "POST", "/components", writer, HTTP), range(4)))

    assert [a.status_code for a in retries] == [201] * 4
    assert len({a.text for a in retries}) == 1
    assert sum("idempotent-replayed" in a.headers for a in retries) == 3
    assert sorted(a.status_code for a in plain) == [201, 409, 409, 409]
    assert Component.select().where(Component.key.in_(["same", "api"])).count() == 2


def test_a_refused_create_keeps_no_key(service, writer):
    key = {"Idempotency-Key": "k"}
    refused = call(service, "POST", "/components", writer, {**HTTP, "interval": "1s"}, **key)
    fixed = call(service, "POST", "/components", writer, HTTP, **key)

    assert (refused.status_code, fixed.status_code) == (422, 201)


def test_a_stale_etag_is_refused(service, writer):
    made = call(service, "POST", "/components", writer, HTTP)
    stale = made.headers["etag"]
    call(service, "PATCH", "/components/api", writer, {"name": "Newer"}, **{"If-Match": stale})

    lost = call(service, "PATCH", "/components/api", writer, {"name": "Lost"}, **{"If-Match": stale})
    gone = call(service, "DELETE", "/components/api", writer, **{"If-Match": stale})
    weak = call(service, "PUT", "/components/api", writer, HTTP, **{"If-Match": f"W/{stale}"})

    current = call(service, "GET", "/components/api", writer).headers["etag"]
    assert current != stale
    assert [a.status_code for a in (lost, gone, weak)] == [412] * 3
    assert lost.json() == {"error": f"component 'api' changed since that ETag: it is now {current} (GET it again)"}
    assert Component.get(key="api").name == "Newer"
    anything = call(service, "PATCH", "/components/api", writer, {"name": "Any"}, **{"If-Match": "*"})
    listed = call(service, "DELETE", "/components/api", writer, **{"If-Match": f'"x", {anything.headers["etag"]}'})
    assert (anything.status_code, listed.status_code) == (200, 204)


def test_each_write_is_audited_and_listed_newest_first(service, writer):
    call(service, "POST", "/components", writer, HTTP)
    call(service, "PATCH", "/components/api", writer, {"interval": "1s"})
    call(service, "PUT", "/components/site", writer, {"name": "Site"})
    call(service, "DELETE", "/components/api", writer)
    call(service, "DELETE", "/components/api", writer)

    first = call(service, "GET", "/audit?limit=3", writer)
    second = call(service, "GET", f"/audit?limit=3&cursor={first.json()['next_cursor']}", writer)

    rows = first.json()["audit"] + second.json()["audit"]
    token_id = ApiAudit.get_by_id(1).token_id
    assert [(r["action"], r["object_key"], r["status"], r["token_id"]) for r in rows] == [
        ("delete", "api", 404, token_id),
        ("delete", "api", 204, token_id),
        ("replace", "site", 409, token_id),
        ("patch", "api", 422, token_id),
        ("create", "api", 201, token_id),
    ]
    assert second.json()["next_cursor"] is None
    assert {r["object_type"] for r in rows} == {"component"}


def test_a_write_needs_the_write_scope_and_the_audit_the_read_one(service):
    reader, writer_only = create("acme", ["read"])[1], create("acme", ["write"])[1]

    refused = call(service, "POST", "/components", reader, HTTP)
    audit = call(service, "GET", "/audit", writer_only)

    assert (refused.status_code, refused.json()) == (403, {"error": "this token lacks the write scope"})
    assert (audit.status_code, audit.json()) == (403, {"error": "this token lacks the read scope"})
    assert Component.select().count() == 1 and ApiAudit.select().count() == 0


def test_another_organizations_component_is_not_found(service, writer, acme):
    globex = Organization.create(slug="globex", name="Globex")
    Component.create(organization=globex, key="shop", name="Shop", url="https://shop.globex.example/", owner="api")

    answers = [
        call(service, "PATCH", "/components/shop", writer, {"name": "Mine"}),
        call(service, "DELETE", "/components/shop", writer),
    ]

    nul = call(service, "DELETE", "/components/a%00b", writer)

    assert [(a.status_code, a.json()) for a in answers] == [(404, {"error": "no component 'shop'"})] * 2
    assert (nul.status_code, nul.json()) == (404, {"error": "no component 'a\\x00b'"})
    assert Component.get(key="shop").name == "Shop"
    assert ApiAudit.select().order_by(ApiAudit.id.desc()).first().object_key == "a\ufffdb"


def test_a_component_made_through_the_api_goes_down_under_the_workers(
    settings, acme, writer, target, workers, schedulers
):
    target.answer("/health", status=503, body=b"down")
    body = {"key": "made", "name": "Made", "url": target.url("/health"), "interval": "15s", "failure_threshold": 1}
    with running(settings) as service:
        made = call(service, "POST", "/components", writer, body)
        assert made.status_code == 201, made.text
        workers(threads=2)
        schedulers()

        # The scheduler gives a new component its first slot within seconds, and the check follows.
        down = wait_for(lambda: Component.get(key="made").status == "MAJOR_OUTAGE", "the outage", timeout=60)
        shown = call(service, "GET", "/components/made", writer).json()

    assert down and shown["status"] == "MAJOR_OUTAGE"


def test_a_row_without_conditions_is_patched_with_its_kinds_defaults(service, writer, acme):
    Component.create(organization=acme, key="bare", name="Bare", url="https://bare.example/", owner="api")

    patched = call(service, "PATCH", "/components/bare", writer, {"name": "Dressed"})

    assert patched.status_code == 200, patched.text
    assert Component.get(key="bare").conditions == ["[STATUS] < 400"]
