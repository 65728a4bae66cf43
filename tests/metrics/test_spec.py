"""Integrations and metrics in the configuration file: validated with the rest, upserted, pruned."""

import re
from pathlib import Path

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import Component, Integration, MetricsQuery

FILE = """
organizations:
  - slug: acme
    name: Acme
    components:
      - {key: latency, name: API latency, type: metric}
      - {key: api, name: Public API, url: "https://api.acme.example/health"}
    integrations:
      - {key: prom, type: prometheus, url: "http://prometheus.acme.example:9090", bearer_token: "t0k3n-t0k3n"}
    metrics:
      - key: api-latency
        name: API latency
        integration: prom
        query: histogram_quantile(0.95, sum by (le) (rate(http_request_seconds_bucket[5m])))
        aggregate: max
        interval: 15s
        unit: ms
        thresholds: {direction: above, warning: 300, critical: 800, for: 3, recover: 2, critical_status: PARTIAL_OUTAGE}
        no_data: degraded
        component: latency
      - {key: errors, name: Errors, integration: prom, query: "sum(rate(errors_total[5m]))"}
"""


def test_metrics_are_applied_and_drive_their_component(database):
    report = configfile.apply(configfile.load(FILE))

    assert (report.integrations, report.metrics) == (1, 2)
    integration = Integration.get()
    assert (integration.key, integration.type) == ("prom", "prometheus")
    assert integration.settings == {"url": "http://prometheus.acme.example:9090", "bearer_token": "t0k3n-t0k3n"}
    latency, errors = MetricsQuery.select().order_by(MetricsQuery.key)
    assert latency.component_id == Component.get(Component.key == "latency").id
    assert (latency.options, latency.interval_seconds, latency.unit) == ({"aggregate": "max"}, 15, "ms")
    assert (latency.direction, latency.warning, latency.critical, latency.critical_status) == (
        "above",
        300,
        800,
        "PARTIAL_OUTAGE",
    )
    assert (latency.for_count, latency.recover_count, latency.no_data) == (3, 2, "degraded")
    assert (errors.component_id, errors.interval_seconds, errors.no_data) == (None, 60, "keep")

    again = configfile.apply(configfile.load(FILE.replace("interval: 15s", "interval: 30s")))
    assert again.metrics == 2 and MetricsQuery.select().count() == 2
    pruned = configfile.apply(configfile.load(FILE.split("      - {key: errors")[0]), prune=True)
    assert (pruned.metrics_deleted, pruned.integrations_deleted) == (1, 0)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ("integration: prom\n        query: hist", "integration: nope\n        query: hist"),
            "names the integration 'nope'",
        ),
        (("component: latency", "component: api"), "must be declared with `type: metric`"),
        (("component: latency", "component: ghost"), "must be declared with `type: metric`"),
        (('query: "sum(rate(errors_total[5m]))"}', "query: up, component: latency}"), "driven by two metrics"),
        (('url: "http://prometheus.acme.example:9090", ', ""), "a prometheus integration needs url"),
        (("type: prometheus", "type: nagios"), "integrations[0].type: Input should be"),
        (("aggregate: max", "aggregate: median"), "aggregate: Input should be"),
        (("warning: 300, critical: 800", "warning: 800, critical: 300"), "critical must be above warning"),
        (("interval: 15s", "interval: 5s"), "interval: must be between 15s and 24h, not 5s"),
        (("for: 3", "for: 0"), "thresholds.for: Input should be greater than or equal to 1"),
        (("no_data: degraded", "no_data: ignore"), "no_data: Input should be"),
        (('bearer_token: "t0k3n-t0k3n"', "bearer_token: t0k3n, username: u"), "not both"),
    ],
)
def test_a_bad_metric_is_refused_naming_the_problem(database, change, problem):
    text = FILE.replace(*change)
    assert text != FILE

    with pytest.raises(ConfigError) as refused:
        configfile.load(text)

    assert problem in str(refused.value)
    assert "t0k3n" not in str(refused.value)


DATADOG = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {key: dd, type: datadog, site: EU1, api_key: "a-p-i-k-e-y-1", app_key: "a-p-p-k-e-y-2"}
"""


def test_a_datadog_integration_takes_a_site_and_two_keys(database):
    configfile.apply(configfile.load(DATADOG))
    assert Integration.get().settings == {"site": "EU1", "api_key": "a-p-i-k-e-y-1", "app_key": "a-p-p-k-e-y-2"}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ((', app_key: "a-p-p-k-e-y-2"', ""), "a datadog integration needs app_key"),
        (("site: EU1", "site: MARS"), "site: Input should be"),
        (("site: EU1", "site: EU1, bearer_token: x"), "a datadog integration does not take bearer_token"),
        (("site: EU1", 'site: EU1, url: "http://127.0.0.1:1"'), "give a site or a url, not both"),
    ],
)
def test_a_bad_datadog_integration_is_refused(database, change, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(DATADOG.replace(*change))
    assert problem in str(refused.value) and "k-e-y" not in str(refused.value)


NEW_RELIC = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {key: nr, type: newrelic, region: EU, account_id: 1234567, api_key: "NRAK-S3CR3T-K3Y"}
    metrics:
      - {key: p95, name: p95, integration: nr, query: "SELECT percentile(duration, 95) FROM Transaction"}
"""


def test_a_new_relic_integration_takes_a_region_an_account_and_a_key(database):
    configfile.apply(configfile.load(NEW_RELIC.replace('95) FROM Transaction"', '95) FROM Transaction", field: x')))
    assert Integration.get().settings == {"region": "EU", "account_id": 1234567, "api_key": "NRAK-S3CR3T-K3Y"}
    assert MetricsQuery.get().options == {"field": "x"}


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ((", account_id: 1234567", ""), "a newrelic integration needs account_id"),
        (("account_id: 1234567", 'account_id: "1234567"'), "account_id: Input should be a valid integer"),
        (("account_id: 1234567", "account_id: 0"), "account_id: Input should be greater than or equal to 1"),
        (("region: EU", "region: APAC"), "region: Input should be 'US' or 'EU'"),
        (("region: EU", "region: EU, site: EU1"), "a newrelic integration does not take site"),
        (("region: EU", 'region: EU, url: "http://127.0.0.1:1"'), "give a region or a url, not both"),
        (("type: newrelic", "type: prometheus"), "a prometheus integration does not take account_id, api_key, region"),
    ],
)
def test_a_bad_new_relic_integration_is_refused(database, change, problem):
    text = NEW_RELIC.replace(*change)
    assert text != NEW_RELIC

    with pytest.raises(ConfigError) as refused:
        configfile.load(text)

    assert problem in str(refused.value) and "S3CR3T" not in str(refused.value)


def test_an_option_the_integration_does_not_take_is_refused(database):
    with pytest.raises(ConfigError, match="metrics\\[1\\]: a prometheus integration's metric does not take field"):
        configfile.load(FILE.replace('query: "sum(rate(errors_total[5m]))"}', 'query: "up", field: up}'))


GRAFANA = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {key: graf, type: grafana, url: "https://grafana.acme.example", bearer_token: "glsa_s3cr3t",
         datasource: P8E80F9AEF21F6940}
    metrics:
      - {key: up, name: Up, integration: graf, query: 'sum(up{job="api"})'}
      - {key: sql, name: SQL, integration: graf, query: '{"rawSql": "SELECT 1 AS value"}'}
"""


def test_a_grafana_integration_takes_a_token_and_a_data_source(database):
    configfile.apply(configfile.load(GRAFANA))
    assert Integration.get().settings == {
        "url": "https://grafana.acme.example",
        "bearer_token": "glsa_s3cr3t",
        "datasource": "P8E80F9AEF21F6940",
    }


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ((",\n         datasource: P8E80F9AEF21F6940", ""), "a grafana integration needs datasource"),
        ((' bearer_token: "glsa_s3cr3t",', ""), "a grafana integration needs bearer_token"),
        (("datasource: P8E80F9AEF21F6940", "datasource: '../admin'"), "datasource: String should match pattern"),
        (('{"rawSql": "SELECT 1 AS value"}', '{"rawSql": SELECT 1}'), "metrics[1].query: a Grafana query that starts"),
        (('{"rawSql": "SELECT 1 AS value"}', "{}}"), "must be a JSON object"),
    ],
)
def test_a_bad_grafana_integration_or_query_is_refused(database, change, problem):
    text = GRAFANA.replace(*change)
    assert text != GRAFANA

    with pytest.raises(ConfigError) as refused:
        configfile.load(text)

    assert problem in str(refused.value) and "s3cr3t" not in str(refused.value)


PINGDOM = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {key: pd, type: pingdom, bearer_token: "p1ngd0m-t0k3n"}
    metrics:
      - {key: web, name: Website, integration: pd, query: "5811286", field: status}
"""


def test_a_pingdom_metric_reads_a_check(database):
    configfile.apply(configfile.load(PINGDOM))
    assert Integration.get().settings == {"bearer_token": "p1ngd0m-t0k3n"}
    assert (MetricsQuery.get().query, MetricsQuery.get().options) == ("5811286", {"field": "status"})


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (('query: "5811286"', "query: www.acme.example"), "metrics[0].query: a Pingdom query is the id of a check"),
        (
            ("field: status", "field: uptime"),
            "metrics[0].query: a Pingdom metric's field is lastresponsetime or status",
        ),
        (('bearer_token: "p1ngd0m-t0k3n"', "username: u"), "does not take username"),
        (("field: status", "aggregate: sum"), "a pingdom integration's metric does not take aggregate"),
    ],
)
def test_a_bad_pingdom_metric_is_refused(database, change, problem):
    text = PINGDOM.replace(*change)
    assert text != PINGDOM

    with pytest.raises(ConfigError) as refused:
        configfile.load(text)

    assert problem in str(refused.value) and "t0k3n" not in str(refused.value)


def test_the_docs_metrics_examples_load(monkeypatch):
    page = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    for name in ("PROM_TOKEN", "DD_API_KEY", "DD_APP_KEY", "NEW_RELIC_USER_KEY", "GRAFANA_TOKEN", "PINGDOM_TOKEN"):
        monkeypatch.setenv(name, "s3cr3t-value")
    assert len(blocks) == 2

    for block in blocks:
        loaded = configfile.load("organizations:\n  - slug: acme\n    name: Acme\n" + block)
        assert loaded.organizations[0].metrics
