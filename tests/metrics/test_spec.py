"""Integrations and metrics in the configuration file: validated with the rest, upserted, pruned."""

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
    assert (latency.failure_threshold, latency.success_threshold, latency.no_data) == (3, 2, "degraded")
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
    ],
)
def test_a_bad_datadog_integration_is_refused(database, change, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(DATADOG.replace(*change))
    assert problem in str(refused.value) and "k-e-y" not in str(refused.value)
