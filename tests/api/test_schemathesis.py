"""schemathesis fuzzes the API from its own OpenAPI document (``/api/openapi.json``), as a client
that reads nothing else would, against the real service and an organization with components (the
file's and the API's, with secrets), channels, subscribers, an integration, a metric and a
calculated metric, incidents and on-call alerts: every operation with the
document's examples, the boundaries of each parameter and body (valid and not: the coverage phase;
not for a component's POST and PUT, whose 40 fields would be ~1,000 requests) and random data
(valid and not), then sequences that follow the links from a create to the operations on what it
made (the stateful phase). Each answer is checked: no 5xx, a status the document lists, the content
type and headers it says, a body of its schema, invalid data refused, a request without its token
refused, and no secret of the organization's (a header's value, a body, a payload, a CA, a
heartbeat's token, a channel's URL and signing secret, a webhook subscriber's URL and secret, an
integration's URL and token, an alert source's token and signing secret, a person's push
subscription, the bearer token) in any body, nor a person's phone number or address but where the
people are answered (the organization's own configuration).

Deterministic (a fixed seed, derandomized) and bounded: about a thousand requests (most of them the
coverage phase's boundaries), about 80 s on 2 cores (measured 77 s with pytest's start, while another run shared them).
"""

import re
from datetime import timedelta

import hypothesis
import pytest
import requests
import schemathesis
from schemathesis.config import SchemathesisConfig

from pulse import configfile
from pulse.api import pages
from pulse.api import routes as api
from pulse.api.tokens import create
from pulse.db import db
from pulse.inbound.limits import TokenBuckets
from pulse.inbound.tokens import digest
from pulse.models import AlertSource, Component, Notification, OnCallAlert, Organization, utcnow
from pulse.models.api_token import SCOPES
from pulse.oncall import alerts
from tests.cleanup.conftest import add_checks
from tests.conftest import empty_tables
from tests.oncall.test_spec import STEADY
from tests.support.certs import Authority
from tests.support.serve import running

HEARTBEAT_TOKEN = "hb-t0ken-" + "x7" * 16
SOURCE_TOKEN = "s0urce-t0ken-s3cr3t"
CHANNEL = {  # write-only: its URL's path and its secret
    "key": "hooks",
    "type": "webhook",
    "url": "https://hooks.acme.example/pulse/ch4nnel-p4th",
    "secret": "ch4nnel-signing-k3y-0f-32-characters",
    "components": ["shop"],
}
SUBSCRIBER = {"webhook": "https://bob.example/pulse/subscr1ber-p4th", "secret": "subscr1ber-signing-k3y-0f-32"}
GRAFANA = {  # write-only: its token and its signing secret
    "key": "grafana",
    "kind": "grafana",
    "token": "gr4fana-t0ken-0f-32-characters-or-more",
    "escalation_policy": "default",
    "signature": {"secret": "gr4fana-signing-k3y"},
}
INTEGRATION = {  # write-only: its URL's path and its token
    "key": "prom",
    "type": "prometheus",
    "url": "https://prometheus.acme.example/integr4tion-p4th",
    "bearer_token": "integr4tion-t0ken",
}
METRIC = {"key": "up", "name": "Up", "integration": "prom", "query": "up"}
CALCULATED = {"key": "twice", "name": "Twice", "formula": "x * 2", "variables": {"x": {"metric": "up"}}}
PERSON = {  # write-only: their push subscription
    "key": "erin",
    "name": "Erin",
    "phone": "+14155550104",
    "push": {
        "endpoint": "https://push.example/send/pu5h-p4th",
        "keys": {"p256dh": "B" + "pu5hp256dh" * 8 + "x" * 3, "auth": "pu5h-4uth-0123456"},
    },
}
SCHEDULE = {
    "key": "nights",
    "time_zone": "Europe/Paris",
    "layers": [{"every": "12h", "handoff": "19:00", "start": "2026-01-05", "members": ["erin", "carol"]}],
}
POLICY = {"key": "nightly", "levels": [{"targets": [{"schedule": "nights"}, {"person": "erin"}], "wait": "5m"}]}
CONTACTS = ("+1415555", "@acme.example")  # people's phone numbers and addresses: answered by /people alone
SECRETS = (
    "s3cr3t",  # a header's value, a body, the source's token
    "hunter2",  # a URL's password
    "k3y",  # a URL's query
    "p4yload",  # a tcp check's payload
    "BEGIN CERTIFICATE",
    HEARTBEAT_TOKEN,
    SOURCE_TOKEN,
    "ch4nnel-p4th",
    CHANNEL["secret"],
    "subscr1ber-p4th",
    SUBSCRIBER["secret"],
    GRAFANA["token"],
    GRAFANA["signature"]["secret"],
    "integr4tion-p4th",
    INTEGRATION["bearer_token"],
    "pu5h-p4th",
    "pu5hp256dh",
    "pu5h-4uth",
    *CONTACTS,
)
LEAKS = list(SECRETS)  # and the bearer token, once it is made
KEYS: list[str] = []  # the Idempotency-Keys made unique
EXAMPLES = 12  # fuzzed cases an operation at most (beside the examples and the coverage phase's)
STEPS = 8
# What the configuration file declares, one.
ONE = ["components_key", "channels_key", "subscribers_id", "integrations_key", "metrics_key"]
ONE += ["calculated_metrics_key", "people_key", "schedules_key", "escalation_policies_key", "alert_sources_key"]
LISTINGS = ["get_components", "get_components_key_checks", "get_channels", "get_subscribers", "get_integrations"]
LISTINGS += ["get_metrics", "get_calculated_metrics", "get_people", "get_schedules", "get_escalation_policies"]
LISTINGS += ["get_alert_sources", "get_incidents", "get_alerts", "get_audit"]
REFERRING = ["post_components", "post_channels", "post_subscribers", "post_integrations", "post_metrics"]
REFERRING += ["post_calculated_metrics", "post_people", "post_schedules", "post_escalation_policies"]
REFERRING += ["post_alert_sources", "post_incidents", "post_alerts_id_acknowledge"]
CONDITIONAL = [f"{method}_{path}" for method in ("put", "patch", "delete") for path in ONE]
CONDITIONAL += ["post_schedules_key_overrides"]  # an override added: If-Match, a person to name
ACCEPTED = [
    "2xx",
    401,
    403,
    404,
    409,
    429,
]  # what schemathesis expects of valid data (not a 5xx: never)  # calls of a stateful scenario at most
SCENARIOS = 12


@pytest.fixture(scope="module")
def organization(settings, tmp_path_factory):
    """acme from the file (people with phones and addresses, an escalation policy, api and web) with
    an incident whose alert paged carol and an alert of its source; a token with every scope; the
    service on loopback, with no rate to speak of."""
    empty_tables()
    configfile.apply(configfile.load(STEADY))
    acme = Organization.get(slug="acme")
    web = Component.get(organization=acme, key="web")
    now = utcnow()
    add_checks(web.id, [(now - timedelta(minutes=n), now - timedelta(minutes=n), "OPERATIONAL", 12) for n in (1, 2)])
    source = AlertSource.create(
        organization=acme,
        key="app",
        name="App",
        kind="events",
        token_sha256=digest(SOURCE_TOKEN),
        routes=[{"match": {}, "policy": "default"}],
    )
    with db.atomic():
        policy = alerts.frozen_policy(acme.id, "default")
        alerts.open_keyed(source, "disk-full", "Disk full", {}, policy, now)
    token = create("acme", list(SCOPES))[1]
    LEAKS.append(token)
    buckets = TokenBuckets(rate_per_s=1_000_000, burst=1_000_000)
    with running(settings, served=api.routes(buckets)) as service:
        url = f"http://127.0.0.1:{service.port}"
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        made = [
            {
                "key": "shop",
                "name": "Shop",
                "url": "https://bot:hunter2@shop.acme.example/health?key=k3y",
                "method": "POST",
                "headers": {"Authorization": "Bearer s3cr3t"},
                "body": '{"password": "s3cr3t"}',
                "ca": Authority(tmp_path_factory.mktemp("ca")).pem.read_text(),
            },
            {"key": "db", "name": "Database", "kind": "tcp", "host": "db.acme.example", "port": 5432},
            {"key": "beat", "name": "Backup", "type": "heartbeat", "period": "1h", "token": HEARTBEAT_TOKEN},
        ]
        for component in made:
            answered = session.post(f"{url}/api/v1/components", json=component, timeout=10)
            assert answered.status_code == 201, answered.text
        seeded = (("channels", CHANNEL), ("subscribers", SUBSCRIBER), ("alert-sources", GRAFANA))
        seeded += (("integrations", INTEGRATION), ("metrics", METRIC), ("calculated-metrics", CALCULATED))
        seeded += (("people", PERSON), ("schedules", SCHEDULE), ("escalation-policies", POLICY))
        for path, body in seeded:
            answered = session.post(f"{url}/api/v1/{path}", json=body, timeout=10)
            assert answered.status_code == 201, answered.text
        opened = {"title": "Payments fail", "message": "Looking into it", "component": "api"}
        answered = session.post(f"{url}/api/v1/incidents", json=opened, timeout=10)
        assert answered.status_code == 201, answered.text
        alerts.open_alert(answered.json()["id"], now)  # as the worker would: it pages carol, by SMS
        Notification.update(status="failed", last_error="twilio says +14155550102 is unreachable").execute()
        assert OnCallAlert.select().count() == 2
        yield url, token
    db.close()


@pytest.fixture(scope="module")
def api_schema(organization):
    url, token = organization
    config = SchemathesisConfig.from_dict(
        {
            "seed": 46,
            "suppress-health-check": ["too_slow", "filter_too_much", "data_too_large"],
            "auth": {"openapi": {"bearer": {"bearer": token}}},
            "request-timeout": 10,
            "generation": {
                "mode": "all",
                "max-examples": EXAMPLES,
                "deterministic": True,
                "database": "none",
                "allow-x00": False,
            },
            "phases": {"stateful": {"max-steps": STEPS}},
            "operations": [
                {  # the coverage phase's boundaries of a component's 40 fields are ~480 requests each: the
                    # fuzzing phase's valid and invalid bodies, and PATCH's coverage, are enough here
                    "include-operation-id": ["post_components", "put_components_key"],
                    "phases": {"coverage": {"enabled": False}},
                },
                {  # a cursor is opaque: one that matches its pattern may still be no cursor the API gave (400)
                    "include-operation-id": LISTINGS,
                    "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, 400]}},
                },
                {  # a component's spec has rules across its fields (an http check's url) beyond its schema;
                    # a body may name an object the organization does not have (a component, a person)
                    "include-operation-id": REFERRING,
                    "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, 422]}},
                },
                {  # the same for a write of one, whose If-Match may name a version it is not (412)
                    "include-operation-id": CONDITIONAL,
                    "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, 412, 422]}},
                },
            ],
        }
    )
    return schemathesis.openapi.from_url(f"{url}/api/openapi.json", config=config)


@schemathesis.check
def no_secret(ctx, response, case):
    """No body holds a secret of the organization's, nor the bearer token; nor a person's contact
    details, but the people's own."""
    shown = CONTACTS if case.formatted_path.startswith("/api/v1/people") else ()
    leaked = [s for s in LEAKS if s in response.text and s not in shown]
    if leaked:
        raise AssertionError(f"{case.method} {case.formatted_path} answered a secret: {leaked[0]!r}")
    return None


def keyed_afresh(case):
    """The case with an Idempotency-Key of its own: schemathesis gives one key to requests that
    differ, which the API rightly refuses (422); each case is a request of its own."""
    key = (case.headers or {}).get("Idempotency-Key")
    if key is not None and re.fullmatch(r"[!-~]([ -~]*[!-~])?", key) and len(key) <= 255:
        KEYS.append(key)
        case.headers["Idempotency-Key"] = f"{key[:240]}-{len(KEYS)}"


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(autouse=True)
def node_id(request):
    """schemathesis' lazy schema renames the test's node by ``_nodeid``, which pytest 9 no longer
    sets: give it one."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


@schema.parametrize()
@hypothesis.settings(deadline=5000)
def test_each_operation_answers_as_its_document_says(case):
    keyed_afresh(case)
    case.call_and_validate(additional_checks=[no_secret], timeout=10)


def test_sequences_following_the_links_answer_as_the_document_says(api_schema):
    class Machine(api_schema.as_state_machine()):
        def before_call(self, case):
            keyed_afresh(case)

        def validate_response(self, response, case, additional_checks=None, **kwargs):
            super().validate_response(response, case, additional_checks=[no_secret], **kwargs)

    Machine.run(
        settings=hypothesis.settings(
            max_examples=SCENARIOS,
            stateful_step_count=STEPS,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
    )


def test_the_document_is_served_without_a_token(organization):
    url, _ = organization

    answered = requests.get(f"{url}/api/openapi.json", timeout=10)

    assert (answered.status_code, answered.headers["content-type"]) == (200, "application/json")
    assert answered.json()["openapi"] == "3.1.0"
    assert requests.get(f"{url}/api/openapi.json", timeout=10).content == answered.content


def test_a_number_of_thousands_of_digits_is_a_400_not_int_s_valueerror(organization):
    url, token = organization
    digits = "9" * 5000  # past Python's 4,300 digits, within a request head's 16 KiB
    headers = {"Authorization": f"Bearer {token}"}

    limit = requests.get(f"{url}/api/v1/components", params={"limit": digits}, headers=headers, timeout=10)
    cursor = requests.get(f"{url}/api/v1/audit", params={"cursor": pages.cursor(digits)}, headers=headers, timeout=10)

    assert (limit.status_code, limit.json()) == (400, {"error": "limit must be a whole number from 1 to 200"})
    assert (cursor.status_code, cursor.json()["error"]) == (
        400,
        "cursor is not one this API gave (use next_cursor as it came)",
    )
