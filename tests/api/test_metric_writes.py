"""Metrics integrations, metrics and calculated metrics through the API, on the real service
(`pulse serve`'s routes, on loopback): made, read, replaced, patched and deleted by the
configuration file's spec, an integration's credentials and URL written and never answered nor
audited, a PATCH that leaves one out keeping it; a reference by key checked as the file checks it
(422 naming the path, the file's messages); a delete of what another names refused (409 naming
it); 409 for one the file made until it is released; `pulse apply --prune` leaving the API's alone
and what they name."""

import pytest

from pulse import configfile
from pulse.api.tokens import create
from pulse.models import ApiAudit, CalculatedMetric, CalculatedMetricVariable, Integration, MetricsQuery, Organization
from pulse.models.base import utcnow
from tests.support.cli import pulse
from tests.support.serve import call

PROM_URL = "https://prom.acme.example/pr0mPATHs3cr3t"
PROM_TOKEN = "pr0mTOKENs3cr3t-0123"
DD_KEYS = {"api_key": "d4tadogAPIs3cr3t-01", "app_key": "d4tadogAPPs3cr3t-01"}
SECRETS = ("pr0mPATHs3cr3t", "pr0mTOKENs3cr3t", "d4tadogAPIs3cr3t", "d4tadogAPPs3cr3t", "gr4fanaTOKENs3cr3t")
FILE = f"""
organizations:
  - slug: acme
    name: Acme Inc.
    components:
      - {{key: api, name: API, url: "https://api.acme.example/"}}
      - {{key: latency, name: API latency, type: metric}}
      - {{key: errors, name: API errors, type: metric}}
    integrations:
      - {{key: prom, type: prometheus, url: "{PROM_URL}", bearer_token: "{PROM_TOKEN}"}}
    metrics:
      - {{key: up, name: Up, integration: prom, query: up, component: latency}}
    calculated_metrics:
      - {{key: twice, name: Twice, formula: "x * 2", variables: {{x: {{metric: up}}}}}}
"""
GRAFANA = {"key": "graf", "type": "grafana", "url": "https://grafana.acme.example", "datasource": "prom1",
           "bearer_token": "gr4fanaTOKENs3cr3t-1"}  # fmt: skip
METRIC = {"key": "p95", "name": "API p95", "integration": "graf", "query": "histogram_quantile(0.95, x)"}


@pytest.fixture
def acme(database):
    """acme as a file declares it: components api, latency and errors (of type metric), integration
    prom, metric up driving latency, calculated metric twice reading up."""
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


def test_an_integration_is_made_read_patched_replaced_and_deleted_and_its_credentials_never_answered(service, writer):
    made = call(service, "POST", "/integrations", writer, GRAFANA)
    read = call(service, "GET", "/integrations/graf", writer)

    assert made.status_code == 201, made.text
    assert made.headers["location"] == "/api/v1/integrations/graf"
    row = Integration.get(key="graf")
    assert made.headers["etag"] == read.headers["etag"] == f'"{row.id}.1"'
    destination = read.json()["destination"]
    assert (
        read.json()
        == made.json()
        == {
            "key": "graf",
            "type": "grafana",
            "destination": destination,
            "site": None,
            "region": None,
            "account_id": None,
            "datasource": "prom1",
            "username": None,
            "credentials": {"bearer_token": True, "password": False, "api_key": False, "app_key": False},
        }
    )
    assert destination.startswith("grafana.acme.example #") and len(destination) == len("grafana.acme.example #") + 8
    assert (row.owner, row.settings) == ("api", {k: v for k, v in GRAFANA.items() if k not in ("key", "type")})

    patched = call(service, "PATCH", "/integrations/graf", writer, {"datasource": "prom2"})
    row = Integration.get(key="graf")
    assert patched.status_code == 200, patched.text
    assert (row.settings["bearer_token"], row.settings["datasource"], row.version) == (
        GRAFANA["bearer_token"],
        "prom2",
        2,
    )

    replaced = call(
        service, "PUT", "/integrations/graf", writer, {"type": "datadog", "site": "EU1", **DD_KEYS},
        **{"If-Match": patched.headers["etag"]},
    )  # fmt: skip
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["destination"], replaced.json()["site"]) == (None, "EU1")
    assert replaced.json()["credentials"] == {
        "bearer_token": False,
        "password": False,
        "api_key": True,
        "app_key": True,
    }
    assert Integration.get(key="graf").settings == {"site": "EU1", **DD_KEYS}

    deleted = call(service, "DELETE", "/integrations/graf", writer)
    assert (deleted.status_code, deleted.text) == (204, "")
    assert call(service, "GET", "/integrations/graf", writer).status_code == 404
    audited = [(r.action, r.object_type, r.object_key, r.status) for r in ApiAudit.select().order_by(ApiAudit.id)]
    assert audited == [
        ("create", "integration", "graf", 201),
        ("patch", "integration", "graf", 200),
        ("replace", "integration", "graf", 200),
        ("delete", "integration", "graf", 204),
    ]
    assert secretless(made, read, patched, replaced)


def test_integrations_are_listed_by_key_filtered_by_type_and_an_invalid_one_never_quoted(service, writer):
    call(service, "POST", "/integrations", writer, GRAFANA)

    grafana = call(service, "GET", "/integrations?type=grafana", writer)
    everyone = call(service, "GET", "/integrations", writer)
    bad = {"key": "bad", "type": "prometheus", "url": "ftp://pr0mPATHs3cr3t", "bearer_token": PROM_TOKEN}
    invalid = [
        call(service, "POST", "/integrations", writer, bad),
        call(service, "POST", "/integrations", writer, {**bad, "url": PROM_URL, "username": "u", "password": "p"}),
        call(service, "POST", "/integrations", writer, {**bad, "url": PROM_URL, "bearer_token": ""}),
    ]

    assert [i["key"] for i in grafana.json()["integrations"]] == ["graf"]
    assert [i["key"] for i in everyone.json()["integrations"]] == ["graf", "prom"]
    assert everyone.json()["integrations"][1]["credentials"]["bearer_token"] is True
    assert [(a.status_code, a.json()["problems"]) for a in invalid] == [
        (422, ["$.url: must be an http:// or https:// URL with a host"]),
        (422, ["$: give a bearer_token or a username and password, not both"]),
        (422, ["$.bearer_token: String should have at least 1 character"]),
    ]
    assert secretless(grafana, everyone, *invalid)


def test_a_metric_names_its_integration_and_component_by_key_and_is_checked_as_the_file_checks_it(service, writer):
    call(service, "POST", "/integrations", writer, GRAFANA)

    made = call(service, "POST", "/metrics", writer, {**METRIC, "component": "errors", "interval": "5m"})
    nothing = call(
        service, "POST", "/metrics", writer, {**METRIC, "key": "x", "integration": "nope", "component": "api"}
    )
    twice = call(service, "POST", "/metrics", writer, {**METRIC, "key": "y", "component": "latency"})
    option = call(service, "POST", "/metrics", writer, {**METRIC, "key": "z", "integration": "prom", "field": "f"})

    assert made.status_code == 201, made.text
    assert made.json() == {
        "key": "p95",
        "name": "API p95",
        "integration": "graf",
        "query": "histogram_quantile(0.95, x)",
        "aggregate": None,
        "field": None,
        "interval_s": 300,
        "unit": "",
        "thresholds": {
            "direction": "above", "warning": None, "critical": None, "for": 1, "recover": 1,
            "critical_status": "MAJOR_OUTAGE",
        },
        "no_data": "keep",
        "component": "errors",
        "paused": False,
        "state": "unknown",
        "last_value": None,
        "last_value_at": None,
        "last_polled_at": None,
    }  # fmt: skip
    row = MetricsQuery.get(key="p95")
    assert (row.owner, row.integration.key, row.component.key) == ("api", "graf", "errors")
    assert [(a.status_code, a.json()["problems"]) for a in (nothing, twice, option)] == [
        (
            422,
            [
                "$.integration names the integration 'nope', which is not declared",
                "$.component drives the component 'api', which must be declared with `type: metric`",
            ],
        ),
        (422, ["$: the component 'latency' is driven by two metrics"]),
        (422, ["$: a prometheus integration's metric does not take field"]),
    ]
    assert MetricsQuery.select().count() == 2

    retyped = call(service, "PUT", "/integrations/graf", writer, {"type": "pingdom", "bearer_token": "t0k3n-0123"})
    assert (retyped.status_code, retyped.json()["problems"]) == (
        422, ["$.type (metric 'p95').query: a Pingdom query is the id of a check (a number)"]
    )  # fmt: skip
    assert Integration.get(key="graf").type == "grafana"

    by_integration = call(service, "GET", "/metrics?integration=graf", writer)
    by_component = call(service, "GET", "/metrics?component=latency", writer)
    assert [m["key"] for m in by_integration.json()["metrics"]] == ["p95"]
    assert [m["key"] for m in by_component.json()["metrics"]] == ["up"]


def test_a_new_interval_or_an_unpaused_metric_is_polled_anew(service, writer):
    call(service, "POST", "/integrations", writer, GRAFANA)
    call(service, "POST", "/metrics", writer, {**METRIC, "paused": True})
    scheduled = utcnow()
    MetricsQuery.update(next_poll_at=scheduled).execute()

    renamed = call(service, "PATCH", "/metrics/p95", writer, {"name": "p95 latency"})
    kept = MetricsQuery.get(key="p95").next_poll_at
    unpaused = call(service, "PATCH", "/metrics/p95", writer, {"paused": False})

    assert (renamed.status_code, unpaused.status_code) == (200, 200)
    assert kept == scheduled
    assert MetricsQuery.get(key="p95").next_poll_at is None
    MetricsQuery.update(next_poll_at=scheduled).execute()
    assert call(service, "PATCH", "/metrics/p95", writer, {"interval": "2m"}).status_code == 200
    assert (MetricsQuery.get(key="p95").next_poll_at, MetricsQuery.get(key="p95").version) == (None, 4)


def test_a_calculated_metric_reads_its_sources_by_key_and_is_checked_as_the_file_checks_it(service, writer):
    body = {"key": "rate", "name": "Rate", "formula": "a / b", "variables": {"a": {"metric": "up"},
            "b": {"calculated": "twice"}}, "unit": "%", "component": "errors"}  # fmt: skip

    made = call(service, "POST", "/calculated-metrics", writer, body)
    unknown = call(
        service, "POST", "/calculated-metrics", writer,
        {**body, "key": "other", "variables": {"a": {"metric": "nope"}, "b": {"extracted": "api/nope"}}},
    )  # fmt: skip
    unparsed = call(service, "POST", "/calculated-metrics", writer, {**body, "key": "other", "formula": "a +"})
    unmatched = call(service, "POST", "/calculated-metrics", writer, {**body, "key": "other", "formula": "a"})
    both = {"a": {"metric": "up"}, "b": {"metric": "up"}}
    stale = call(
        service, "POST", "/calculated-metrics", writer, {**body, "key": "other", "max_age": "30s", "variables": both}
    )
    cycle = call(
        service, "PUT", "/calculated-metrics/rate", writer,
        {**body, "formula": "a + b", "variables": {"a": {"calculated": "rate"}, "b": {"metric": "up"}}},
    )  # fmt: skip

    assert made.status_code == 201, made.text
    assert (made.json()["variables"], made.json()["max_age_s"], made.json()["component"]) == (
        body["variables"], 600, "errors"
    )  # fmt: skip
    row = CalculatedMetric.get(key="rate")
    assert (row.owner, row.due_at is not None) == ("api", True)
    sources = {(v.name, v.metrics_query_id, v.calculated_input_id) for v in row.variables}
    assert sources == {("a", MetricsQuery.get(key="up").id, None), ("b", None, CalculatedMetric.get(key="twice").id)}
    assert (unknown.status_code, unknown.json()["problems"]) == (
        422,
        [
            "$.variables.a names the metric 'nope', which is not declared",
            "$.variables.b names 'api/nope', which no component declares (component key/name of one of its "
            "`extract` values)",
            "$: the component 'errors' is driven by two metrics",
        ],
    )
    assert unparsed.status_code == unmatched.status_code == 422
    assert unparsed.json()["problems"][0].startswith("$.formula: ")
    assert unmatched.json()["problems"] == ["$: variables maps b, which the formula does not use"]
    assert stale.json()["problems"][0].startswith("$.max_age (30s) is shorter than the interval of its input a (1m)")
    assert (cycle.status_code, cycle.json()["problems"]) == (422, ["$ feeds itself: rate -> rate"])
    assert CalculatedMetric.select().count() == 2


def test_what_another_names_is_not_deleted_and_says_who_names_it(service, writer):
    for resource, key in (("integrations", "prom"), ("metrics", "up"), ("calculated-metrics", "twice")):
        assert pulse(resource, "release", "acme", key).returncode == 0
    call(service, "POST", "/calculated-metrics", writer,
         {"key": "quad", "name": "Quad", "formula": "y * 2", "variables": {"y": {"calculated": "twice"}}})  # fmt: skip

    integration = call(service, "DELETE", "/integrations/prom", writer)
    metric = call(service, "DELETE", "/metrics/up", writer)
    calculated = call(service, "DELETE", "/calculated-metrics/twice", writer)

    assert [(a.status_code, a.json()["error"]) for a in (integration, metric, calculated)] == [
        (409, "integration 'prom' is named by metric 'up': change or delete them first"),
        (409, "metric 'up' is named by calculated metric 'twice': change or delete them first"),
        (409, "calculated metric 'twice' is named by calculated metric 'quad': change or delete them first"),
    ]
    assert (Integration.select().count(), MetricsQuery.select().count(), CalculatedMetric.select().count()) == (1, 1, 2)
    for path in ("/calculated-metrics/quad", "/calculated-metrics/twice", "/metrics/up", "/integrations/prom"):
        assert call(service, "DELETE", path, writer).status_code == 204
    assert CalculatedMetricVariable.select().count() == 0


def test_what_the_file_made_is_refused_until_it_is_released(service, writer):
    said = (
        "acme/{} is declared by the configuration file: change it there, or release it with `pulse {} release acme {}`"
    )
    answers = [
        call(service, "PATCH", "/integrations/prom", writer, {"bearer_token": "another-token-0123"}),
        call(service, "DELETE", "/metrics/up", writer),
        call(service, "PATCH", "/calculated-metrics/twice", writer, {"unit": "x"}),
    ]
    exists = call(service, "POST", "/integrations", writer, {**GRAFANA, "key": "prom"})

    assert [(a.status_code, a.json()["error"]) for a in answers] == [
        (409, said.format("prom", "integrations", "prom")),
        (409, said.format("up", "metrics", "up")),
        (409, said.format("twice", "calculated-metrics", "twice")),
    ]
    assert (exists.status_code, exists.json()["error"]) == (
        409, "integration 'prom' exists: PUT or PATCH /api/v1/integrations/prom changes it"
    )  # fmt: skip

    released = [pulse(*command.split()) for command in (
        "integrations release acme prom", "metrics release acme up", "calculated-metrics release acme twice"
    )]  # fmt: skip
    assert [r.returncode for r in released] == [0, 0, 0], [r.stderr for r in released]
    assert (
        pulse("metrics", "release", "acme", "nope").stderr.strip().endswith("no metric 'nope' in organization 'acme'")
    )
    patched = call(service, "PATCH", "/calculated-metrics/twice", writer, {"unit": "x"})
    assert patched.status_code == 200, patched.text
    assert [(r.owner, r.version) for r in (Integration.get(), MetricsQuery.get(), CalculatedMetric.get())] == [
        ("api", 2), ("api", 2), ("api", 3)
    ]  # fmt: skip
    assert [r.object_type for r in ApiAudit.select().where(ApiAudit.action == "release").order_by(ApiAudit.id)] == [
        "integration", "metric", "calculated metric"
    ]  # fmt: skip
    assert secretless(*answers, exists, patched)


def test_apply_leaves_the_apis_objects_and_what_they_name_alone_until_the_file_names_them(service, writer):
    call(service, "POST", "/integrations", writer, GRAFANA)
    call(service, "POST", "/metrics", writer, {**METRIC, "integration": "prom"})
    call(service, "POST", "/calculated-metrics", writer,
         {"key": "half", "name": "Half", "formula": "x / 2", "variables": {"x": {"calculated": "twice"}}})  # fmt: skip
    bare = FILE.split("    integrations:")[0]

    report = configfile.apply(configfile.load(bare), prune=True)

    assert sorted(i.key for i in Integration.select()) == ["graf", "prom"]  # prom: p95 uses it
    assert [m.key for m in MetricsQuery.select()] == ["p95"]
    assert sorted(c.key for c in CalculatedMetric.select()) == ["half", "twice"]  # twice: half reads it
    assert (report.integrations_deleted, report.metrics_deleted, report.calculated_metrics_deleted) == (0, 1, 0)
    assert MetricsQuery.get(key="p95").integration.key == "prom"

    naming = bare + "    integrations:\n" + f'      - {{key: graf, type: grafana, url: "{GRAFANA["url"]}", '
    naming += 'datasource: prom3, bearer_token: "t0k3n-0123"}\n    metrics:\n'
    naming += "      - {key: p95, name: p95, integration: graf, query: 'x', interval: 2m}\n"
    configfile.apply(configfile.load(naming), prune=True)

    taken = [Integration.get(key="graf"), MetricsQuery.get(key="p95")]
    assert [(r.owner, r.version) for r in taken] == [("file", 2), ("file", 2)]
    assert taken[1].interval_seconds == 120
    assert sorted(i.key for i in Integration.select()) == ["graf"]
    assert call(service, "PATCH", "/metrics/p95", writer, {"paused": True}).status_code == 409
