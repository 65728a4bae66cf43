"""The API on the real service (`pulse serve`'s routes, on loopback): bearer tokens with scopes,
401 alike for every token that cannot be used, 403 naming the scope, 429 per token, each
organization's components and nothing else, pages covering each exactly once, no secret in a body."""

import logging
from datetime import timedelta

import pytest
import requests

from pulse.api import pages
from pulse.api import routes as api
from pulse.api.tokens import create
from pulse.inbound.limits import TokenBuckets
from pulse.models import ApiToken, Component, Organization, utcnow
from tests.support.cli import pulse
from tests.support.serve import running

SECRETS = ("s3cr3t", "hunter2", "k3y", "p4yload", "BEGIN CERTIFICATE")
UNAUTHORIZED = {"error": "a valid bearer token is required"}


@pytest.fixture
def orgs(database):
    """acme with an http component whose headers, body, URL and CA hold secrets, a tcp one sending
    one, a dns one; globex with a component of its own."""
    acme = Organization.create(slug="acme", name="Acme Inc.")
    Component.create(
        organization=acme,
        key="api",
        name="Public API",
        url="https://bot:hunter2@api.acme.example:8443/health?key=k3y#frag",
        method="POST",
        headers={"Authorization": "Bearer s3cr3t", "X-Trace": "s3cr3t-too"},
        body='{"password": "s3cr3t"}',
        target={"ca": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
        interval_seconds=30,
    )
    Component.create(
        organization=acme,
        key="db",
        name="Database",
        kind="tcp",
        target={"host": "db.acme.example", "port": 5432, "send": "AUTH p4yload\r\n", "tls": False, "verify": True},
        status="MAJOR_OUTAGE",
    )
    Component.create(
        organization=acme,
        key="dns",
        name="Resolver",
        kind="dns",
        target={"query": "acme.example", "record": "A", "resolver": None},
        paused=True,
    )
    globex = Organization.create(slug="globex", name="Globex")
    Component.create(organization=globex, key="shop", name="Shop", url="https://shop.globex.example/")
    return acme, globex


@pytest.fixture
def service(settings, orgs):
    with running(settings) as running_service:
        yield running_service


def token(slug="acme", scopes=("read",), **fields):
    return create(slug, list(scopes), **fields)[1]


def get(service, path, bearer=None, **params):
    headers = {"Authorization": f"Bearer {bearer}"} if bearer is not None else {}
    return requests.get(f"http://127.0.0.1:{service.port}{path}", headers=headers, params=params, timeout=10)


def test_the_organization_is_the_tokens(service):
    answered = get(service, "/api/v1/organization", token())

    assert (answered.status_code, answered.json()) == (200, {"slug": "acme", "name": "Acme Inc."})
    assert answered.headers["content-type"] == "application/json"


def test_a_component_shows_its_public_fields_and_no_secret(service):
    listed = get(service, "/api/v1/components", token())
    one = get(service, "/api/v1/components/api", token())

    assert listed.status_code == one.status_code == 200
    assert [c["key"] for c in listed.json()["components"]] == ["api", "db", "dns"]
    assert listed.json()["components"][0] == one.json()
    shown = one.json()
    assert shown["status_since"] is not None and shown["last_checked_at"] is None
    del shown["status_since"]
    assert shown == {
        "key": "api",
        "name": "Public API",
        "type": "ENDPOINT",
        "kind": "http",
        "status": "OPERATIONAL",
        "paused": False,
        "interval_s": 30,
        "last_checked_at": None,
        "check": {
            "url": "https://api.acme.example:8443/health",
            "method": "POST",
            "header_names": ["Authorization", "X-Trace"],
            "forward_headers": False,
            "own_ca": True,
        },
    }
    db, dns = listed.json()["components"][1:]
    assert db["check"] == {
        "host": "db.acme.example",
        "port": 5432,
        "tls": False,
        "verify": True,
        "sends": True,
        "own_ca": False,
    }
    assert (dns["paused"], dns["check"]) == (True, {"query": "acme.example", "record": "A", "resolver": None})
    for body in (listed.text, one.text, get(service, "/api/v1/components/db", token()).text):
        for secret in SECRETS:
            assert secret not in body


def test_a_token_made_by_the_command_line_works_until_it_is_revoked(service):
    made = pulse("tokens", "create", "--org", "acme", "--scope", "read")
    [made_token] = [line for line in made.stdout.splitlines() if not line.startswith("#")]

    before = get(service, "/api/v1/organization", made_token)
    revoked = pulse("tokens", "revoke", "1")
    after = get(service, "/api/v1/organization", made_token)

    assert before.status_code == 200 and revoked.returncode == 0
    assert (after.status_code, after.json(), after.headers["www-authenticate"]) == (401, UNAUTHORIZED, "Bearer")


def test_every_token_that_cannot_be_used_gets_the_same_401(service, caplog):
    caplog.set_level(logging.INFO)
    expired = token(expires=timedelta(days=1))
    ApiToken.update(expires_at=utcnow() - timedelta(seconds=1)).execute()
    good = token()
    revoked = token()
    ApiToken.update(revoked_at=utcnow()).where(ApiToken.id == 3).execute()
    unknown = "pulse_" + "x" * 43

    answers = [
        get(service, "/api/v1/components"),
        get(service, "/api/v1/components", "not-a-token"),
        get(service, "/api/v1/components", good[:-1]),
        get(service, "/api/v1/components", unknown),
        get(service, "/api/v1/components", expired),
        get(service, "/api/v1/components", revoked),
        requests.get(
            f"http://127.0.0.1:{service.port}/api/v1/components", headers={"Authorization": f"Basic {good}"}, timeout=10
        ),
    ]

    assert [(a.status_code, a.json(), a.headers["www-authenticate"]) for a in answers] == [
        (401, UNAUTHORIZED, "Bearer")
    ] * len(answers)
    assert get(service, "/api/v1/components", good).status_code == 200
    refused = [
        r.getMessage().rpartition(": ")[2] for r in caplog.records if r.name == "pulse.inbound" and r.status == 401
    ]
    assert refused == [
        "no bearer token.",
        "a malformed bearer token.",
        "a malformed bearer token.",
        "an unknown token.",
        "an expired token (id 1).",
        "a revoked token (id 3).",
        "no bearer token.",
    ]
    for secret in (good, expired, revoked, unknown):
        assert secret not in caplog.text


def test_a_token_without_the_scope_is_refused_naming_it(service):
    write_only = token(scopes=("write", "oncall"))

    answered = get(service, "/api/v1/components", write_only)

    assert (answered.status_code, answered.json()) == (403, {"error": "this token lacks the read scope"})


def test_another_organizations_components_are_invisible(service):
    globex = token("globex")

    listed = get(service, "/api/v1/components", globex)
    theirs = get(service, "/api/v1/components/api", globex)

    assert [c["key"] for c in listed.json()["components"]] == ["shop"]
    assert (theirs.status_code, theirs.json()) == (404, {"error": "no component 'api'"})
    assert get(service, "/api/v1/organization", globex).json()["slug"] == "globex"


def test_pages_cover_every_component_exactly_once(service, orgs):
    acme, _ = orgs
    for n in range(47):
        Component.create(
            organization=acme, key=f"c{n:02}", name=f"C {n}", status="MAJOR_OUTAGE" if n % 3 else "OPERATIONAL"
        )
    bearer = token()
    expected = sorted(["api", "db", "dns", *(f"c{n:02}" for n in range(47))])

    def walk(**filters):
        keys, cursor, pages = [], None, 0
        while True:
            params = {"limit": "7", **filters, **({"cursor": cursor} if cursor else {})}
            answered = get(service, "/api/v1/components", bearer, **params)
            assert answered.status_code == 200, answered.text
            page = answered.json()
            assert len(page["components"]) <= 7
            keys += [c["key"] for c in page["components"]]
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                return keys, pages

    assert walk() == (expected, 8)
    outages, _ = walk(status="MAJOR_OUTAGE")
    assert outages == sorted(["db", *(f"c{n:02}" for n in range(47) if n % 3)])
    assert walk(kind="tcp") == (["db"], 1)
    assert walk(type="METRIC") == walk(type="HEARTBEAT") == ([], 1)
    default = get(service, "/api/v1/components", bearer).json()
    assert len(default["components"]) == 50 and default["next_cursor"] is None


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"limit": "0"}, "limit must be a whole number from 1 to 200"),
        ({"limit": "201"}, "limit must be a whole number from 1 to 200"),
        ({"limit": "ten"}, "limit must be a whole number from 1 to 200"),
        (
            {"status": "DOWN"},
            "status must be one of OPERATIONAL, DEGRADED_PERFORMANCE, PARTIAL_OUTAGE, MAJOR_OUTAGE, UNDER_MAINTENANCE",
        ),
        ({"kind": "smtp"}, "kind must be one of http, tcp, dns, icmp, tls"),
        ({"type": "endpoint"}, "type must be one of ENDPOINT, METRIC, SERVICE, HEARTBEAT"),
        ({"cursor": "%%%"}, "cursor is not one this API gave (use next_cursor as it came)"),
    ],
)
def test_a_bad_query_is_refused_in_json(service, params, said):
    answered = get(service, "/api/v1/components", token(), **params)

    assert (answered.status_code, answered.json()) == (400, {"error": said})


def test_last_use_is_written_at_most_once_a_minute(service):
    bearer = token()

    get(service, "/api/v1/organization", bearer)
    first = ApiToken.get_by_id(1).last_used_at
    get(service, "/api/v1/organization", bearer)
    second = ApiToken.get_by_id(1).last_used_at
    ApiToken.update(last_used_at=utcnow() - timedelta(seconds=61)).execute()
    get(service, "/api/v1/organization", bearer)
    third = ApiToken.get_by_id(1).last_used_at

    assert first is not None and second == first
    assert third > first


def test_each_token_has_its_own_rate(settings, orgs):
    served = api.routes(TokenBuckets(rate_per_s=0.01, burst=2))
    busy, quiet = token(), token()
    with running(settings, served=served) as service:
        answers = [get(service, "/api/v1/organization", busy) for _ in range(3)]
        other = get(service, "/api/v1/organization", quiet)

    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[2].headers["retry-after"] == "100"
    assert answers[2].json() == {"error": "over this token's rate: retry in 100 s"}
    assert other.status_code == 200


def test_the_kind_filter_knows_every_kind():
    from pulse.api.components import KINDS
    from pulse.uptime.kinds import KINDS as ALL_KINDS

    assert set(KINDS) == set(ALL_KINDS)


def test_another_path_or_method_of_the_api_is_answered_in_json(service):
    base = f"http://127.0.0.1:{service.port}/api/v1"

    nowhere = requests.get(f"{base}/nothing/here", timeout=10)
    put = requests.put(
        f"{base}/components", json={"key": "new"}, headers={"Authorization": f"Bearer {token()}"}, timeout=10
    )
    posted = requests.post(f"{base}/organization", json={}, headers={"Authorization": f"Bearer {token()}"}, timeout=10)

    assert (nowhere.status_code, nowhere.json()) == (404, {"error": "no such route of the API"})
    assert (put.status_code, put.json()) == (405, {"error": "PUT is not answered here (Allow: GET, HEAD, POST)"})
    assert put.headers["allow"] == "GET, HEAD, POST"
    assert (posted.status_code, posted.headers["allow"]) == (405, "GET, HEAD")
    assert Component.select().count() == 4


def test_a_nul_in_a_key_or_a_cursor_is_answered_never_a_500(service):
    bearer = token()
    assert get(service, "/api/v1/components/a%00b", bearer).json() == {"error": "no component 'a\\x00b'"}
    nul_cursor = pages.cursor("a\x00b")
    assert get(service, "/api/v1/components", bearer, cursor=nul_cursor).status_code == 400
    assert get(service, "/api/v1/components", bearer, status="\x00").status_code == 400
