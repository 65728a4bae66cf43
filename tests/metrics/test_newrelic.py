"""The New Relic integration against a strict local fake of NerdGraph."""

import threading

import pytest

from pulse import configfile
from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support.cli import pulse
from tests.support.newrelic import NewRelic

NEW_RELIC = INTEGRATIONS["newrelic"]
NRQL = "SELECT average(duration) FROM Transaction SINCE 5 minutes ago"


@pytest.fixture
def newrelic():
    with NewRelic() as fake:
        yield fake


def query(newrelic, text=NRQL, timeout_s=5, **options):
    settings = {"url": newrelic.url, "account_id": newrelic.account_id, "api_key": newrelic.api_key}
    return NEW_RELIC.query(settings, text, options, AddressPolicy(), timeout_s)


def refused(newrelic, text=NRQL, **settings):
    with pytest.raises(ApiError) as caught:
        if settings:
            NEW_RELIC.query(
                {"url": newrelic.url, "account_id": newrelic.account_id, "api_key": newrelic.api_key, **settings},
                text,
                {},
                AddressPolicy(),
                5,
            )
        else:
            query(newrelic, text)
    return caught.value


def test_the_value_is_the_rows_one_number(newrelic):
    newrelic.results[NRQL] = [{"average.duration": 0.235}]

    assert query(newrelic, timeout_s=10) == Sample(0.235)
    [request] = newrelic.requests
    assert request["headers"]["api-key"] == newrelic.api_key
    assert request["variables"] == {"id": newrelic.account_id, "q": NRQL, "t": 9}


def test_polls_of_one_integration_share_a_kept_alive_connection(newrelic):
    newrelic.results[NRQL] = [{"average.duration": 0.235}]

    assert [query(newrelic) for _ in range(3)] == [Sample(0.235)] * 3
    assert newrelic.connections == 1


def test_a_percentile_and_a_named_column(newrelic):
    newrelic.results["SELECT percentile(duration, 95) FROM Transaction"] = [{"percentile.duration": {"95": 0.71}}]
    newrelic.results["SELECT average(duration), max(duration) FROM Transaction"] = [
        {"average.duration": 0.2, "max.duration": 3.5}
    ]

    assert query(newrelic, "SELECT percentile(duration, 95) FROM Transaction") == Sample(0.71)
    assert query(newrelic, "SELECT average(duration), max(duration) FROM Transaction", field="max.duration") == Sample(
        3.5
    )
    with pytest.raises(ApiError, match=r"2 numeric columns \(average.duration, max.duration\): name the one"):
        query(newrelic, "SELECT average(duration), max(duration) FROM Transaction")
    with pytest.raises(ApiError, match=r"no column 'min\.duration'"):
        query(newrelic, "SELECT average(duration), max(duration) FROM Transaction", field="min.duration")


def test_facets_need_a_rule_and_a_timeseries_counts_its_last_bucket(newrelic):
    facets = "SELECT count(*) FROM Transaction FACET appName"
    newrelic.results[facets] = [
        {"facet": "checkout", "appName": "checkout", "count": 30},
        {"facet": "search", "appName": "search", "count": 12},
    ]
    series = "SELECT count(*) FROM Transaction FACET appName TIMESERIES 1 minute"
    newrelic.results[series] = [
        {"beginTimeSeconds": 60, "endTimeSeconds": 120, "facet": "checkout", "appName": "checkout", "count": 5},
        {"beginTimeSeconds": 60, "endTimeSeconds": 120, "facet": "search", "appName": "search", "count": 1},
        {"beginTimeSeconds": 120, "endTimeSeconds": 180, "facet": "checkout", "appName": "checkout", "count": 7},
        {"beginTimeSeconds": 120, "endTimeSeconds": 180, "facet": "search", "appName": "search", "count": 2},
    ]

    assert query(newrelic, facets, aggregate="sum") == Sample(42.0, "sum of 2 series")
    assert query(newrelic, series, aggregate="max") == Sample(7.0, "max of 2 series")
    with pytest.raises(ApiError, match="the query returned 2 series") as caught:
        query(newrelic, facets)
    assert caught.value.permanent


def test_no_rows_and_a_null_value_are_no_data(newrelic):
    assert query(newrelic) == Sample(None, "the query returned no rows")
    newrelic.results[NRQL] = [{"average.duration": None}]
    assert query(newrelic) == Sample(None, "the query's value is null (no events in its window)")


@pytest.mark.parametrize(
    ("nrql", "settings", "text"),
    [
        ("SELEC count(*) FROM Transaction", {}, "New Relic: NRQL Syntax Error: Error at line 1 position 1"),
        (NRQL, {"api_key": "NRAK-WRONGWRONGWRONG"}, "New Relic: Invalid API key"),
        (NRQL, {"account_id": 42}, "New Relic: Not authorized to access account 42"),
    ],
)
def test_graphql_errors_in_a_200_are_permanent_failures(newrelic, nrql, settings, text):
    error = refused(newrelic, nrql, **settings)

    assert error.permanent and str(error).startswith(text)
    assert "WRONG" not in str(error)


def test_a_missing_key_is_a_permanent_401(newrelic):
    assert refused(newrelic, api_key="").status == 401


def test_a_timeout_is_worth_retrying(newrelic):
    newrelic.slow.add(NRQL)

    error = refused(newrelic)

    assert not error.permanent and "query timeout" in str(error)


def test_too_many_requests_in_flight_are_rate_limited(newrelic):
    newrelic.concurrency = 1
    newrelic.gate.clear()
    first = threading.Thread(target=query, args=(newrelic,))
    first.start()
    assert newrelic.inside.acquire(timeout=10)

    error = refused(newrelic)
    newrelic.gate.set()
    first.join()

    assert not error.permanent and error.status == 429 and error.retry_after == 1.0


@pytest.mark.parametrize(
    "results",
    [{"not": "a list"}, ["not a row"], [{"count": "many"}]],
)
def test_an_answer_that_is_not_nerdgraphs_is_a_permanent_failure(newrelic, results):
    newrelic.results[NRQL] = results

    assert refused(newrelic).permanent


FILE = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {{key: nr, type: newrelic, url: "{url}", account_id: {account}, api_key: "{key}"}}
      - {{key: prom, type: prometheus, url: "http://127.0.0.1:9"}}
"""


def test_pulse_metrics_query_takes_the_column_to_read(database, newrelic):
    configfile.apply(configfile.load(FILE.format(url=newrelic.url, account=newrelic.account_id, key=newrelic.api_key)))
    two = "SELECT average(duration), max(duration) FROM Transaction"
    newrelic.results[two] = [{"average.duration": 0.2, "max.duration": 3.5}]

    assert pulse("metrics", "query", "nr", two, "--field", "max.duration").stdout == "3.5\n"
    assert pulse("metrics", "query", "prom", "up", "--field", "x").stderr == (
        "pulse: a prometheus integration does not take --field\n"
    )
    newrelic.api_key = "NRAK-ROTATED"
    failed = pulse("metrics", "query", "nr", two, "--field", "max.duration")
    assert (failed.returncode, failed.stderr) == (2, "pulse: New Relic: Invalid API key\n")
