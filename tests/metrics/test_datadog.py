"""The Datadog integration against a strict local fake of its metrics query API."""

import time

import pytest

from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support.datadog import Datadog

DATADOG = INTEGRATIONS["datadog"]
QUERY = "avg:api.latency{env:prod}"


@pytest.fixture
def datadog():
    with Datadog() as fake:
        yield fake


def query(datadog, text=QUERY, **options):
    settings = {"url": datadog.url, "api_key": datadog.api_key, "app_key": datadog.app_key}
    return DATADOG.query(settings, text, options, AddressPolicy(), 5)


def now_ms(seconds_ago=0):
    return int((time.time() - seconds_ago) * 1000)


def test_the_value_is_the_last_point_that_is_not_null(datadog):
    datadog.series[QUERY] = [[[now_ms(60), 110.0], [now_ms(40), 120.5], [now_ms(20), None]]]

    assert query(datadog) == Sample(120.5)
    [request] = datadog.requests
    start, end = int(request["query"]["from"][0]), int(request["query"]["to"][0])
    assert end - start == 600 and abs(end - time.time()) < 5
    assert (request["headers"]["dd-api-key"], request["headers"]["dd-application-key"]) == (
        datadog.api_key,
        datadog.app_key,
    )


def test_polls_of_one_integration_share_a_kept_alive_connection(datadog):
    datadog.series[QUERY] = [[[now_ms(), 100.0]]]

    assert [query(datadog) for _ in range(3)] == [Sample(100.0)] * 3
    assert datadog.connections == 1


def test_several_series_need_a_rule_to_make_one_value(datadog):
    datadog.series[QUERY] = [[[now_ms(), 100.0]], [[now_ms(), 300.0]]]

    assert query(datadog, aggregate="avg") == Sample(200.0, "avg of 2 series")
    with pytest.raises(ApiError, match="the query returned 2 series") as refused:
        query(datadog)
    assert refused.value.permanent


def test_no_series_and_only_null_points_are_no_data(datadog):
    assert query(datadog) == Sample(None, "the query returned no series")
    datadog.series[QUERY] = [[[now_ms(30), None], [now_ms(10), None]]]
    assert query(datadog) == Sample(None, "no point in the last 10 minutes")


def test_bad_keys_are_a_permanent_failure(datadog):
    settings = {"url": datadog.url, "api_key": "wrong-key-wrong-key", "app_key": datadog.app_key}

    with pytest.raises(ApiError) as refused:
        DATADOG.query(settings, QUERY, {}, AddressPolicy(), 5)

    assert refused.value.permanent and str(refused.value) == "Datadog answered 403: Forbidden"
    assert "wrong-key" not in str(refused.value)


def test_a_query_that_does_not_parse_is_a_permanent_failure_with_datadogs_reason(datadog):
    with pytest.raises(ApiError) as refused:
        query(datadog, "avg:api.latency{env:prod")

    assert refused.value.permanent and refused.value.status == 400
    assert "Datadog answered 400: Error parsing query:" in str(refused.value)


def test_a_rate_limited_query_waits_for_the_reset(datadog):
    datadog.limit, datadog.period = 1, 7
    query(datadog)

    with pytest.raises(ApiError) as limited:
        query(datadog)

    assert not limited.value.permanent and limited.value.retry_after == 7.0


@pytest.mark.parametrize(
    "answer",
    [["not", "an", "object"], {"status": "ok", "series": "abc"}, {"status": "ok", "series": [1, 2]}],
)
def test_an_answer_that_is_not_datadogs_json_is_a_permanent_failure(datadog, answer):
    datadog.broken = answer

    with pytest.raises(ApiError, match="Datadog answered something that is not its API's JSON") as refused:
        query(datadog)

    assert refused.value.permanent


def test_a_value_that_is_not_a_number_is_a_permanent_failure(datadog):
    datadog.series[QUERY] = [[[now_ms(), "fast"]]]

    with pytest.raises(ApiError, match="a value in its answer is not a number"):
        query(datadog)
