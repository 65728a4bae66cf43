"""The Grafana integration against a strict local fake of its data source query API."""

import json
import time

import pytest

from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support.grafana import Grafana

GRAFANA = INTEGRATIONS["grafana"]
EXPR = 'sum(rate(http_requests_total{job="api"}[5m]))'


@pytest.fixture
def grafana():
    with Grafana() as fake:
        yield fake


def query(grafana, text=EXPR, datasource=None, bearer_token=None, **options):
    settings = {
        "url": grafana.url,
        "bearer_token": bearer_token or grafana.token,
        "datasource": datasource or grafana.prometheus,
    }
    return GRAFANA.query(settings, text, options, AddressPolicy(), 5)


def refused(grafana, text=EXPR, **arguments):
    with pytest.raises(ApiError) as caught:
        query(grafana, text, **arguments)
    return caught.value


def test_plain_text_is_an_instant_expr_and_the_value_its_last_number(grafana):
    grafana.series[EXPR] = [({"job": "api"}, [3.0, 4.5, None])]

    assert query(grafana) == Sample(4.5)
    [request] = grafana.requests
    assert request["headers"]["authorization"] == f"Bearer {grafana.token}"
    [sent] = request["body"]["queries"]
    assert sent["expr"] == EXPR and sent["instant"] is True and sent["datasource"] == {"uid": grafana.prometheus}
    start, end = int(request["body"]["from"]), int(request["body"]["to"])
    assert end - start == 600_000 and abs(end / 1000 - time.time()) < 5


def test_a_json_query_is_the_data_sources_own_model(grafana):
    sql = "SELECT now() AS time, avg(latency_ms) AS value FROM requests"
    grafana.series[sql] = [({}, [120.0])]

    assert query(grafana, json.dumps({"rawSql": sql, "format": "time_series"}), grafana.mysql) == Sample(120.0)
    [sent] = grafana.requests[0]["body"]["queries"]
    assert sent["rawSql"] == sql and sent["format"] == "time_series" and "expr" not in sent


def test_several_series_need_a_rule_and_none_is_no_data(grafana):
    grafana.series[EXPR] = [({"instance": "a"}, [100.0]), ({"instance": "b"}, [300.0])]

    assert query(grafana, aggregate="max") == Sample(300.0, "max of 2 series")
    with pytest.raises(ApiError, match="the query returned 2 series"):
        query(grafana)
    assert query(grafana, "absent_metric") == Sample(None, "the query returned no series")


@pytest.mark.parametrize("failed_status", [400, 207, 500])
def test_a_query_the_data_source_refuses_fails_for_good_in_every_form(grafana, failed_status):
    grafana.failed_status = failed_status

    error = refused(grafana, "sum(rate(x[5m])")

    assert error.permanent and "parse error: unclosed left parenthesis" in str(error)


@pytest.mark.parametrize("failed_status", [400, 207, 500])
def test_a_data_source_down_is_retried_in_every_form(grafana, failed_status):
    grafana.failed_status, grafana.down = failed_status, {grafana.prometheus}

    error = refused(grafana)

    assert not error.permanent and "connect: refused" in str(error)


def test_grafanas_own_refusals_are_permanent_and_keep_the_token_out(grafana):
    unknown = refused(grafana, datasource="nope")
    grafana.denied.add(grafana.prometheus)
    denied = refused(grafana)
    wrong = refused(grafana, bearer_token="glsa_wrongwrongwrongwrong")

    assert (unknown.status, str(unknown)) == (404, "Grafana answered 404: Data source not found")
    assert (denied.status, str(denied)) == (403, "Grafana answered 403: Access denied to data source")
    assert wrong.status == 401 and wrong.permanent and "wrong" not in str(wrong)


def test_a_query_model_that_is_not_a_json_object_is_refused_before_sending(grafana):
    error = refused(grafana, '{"rawSql": ')

    assert error.permanent and "must be a JSON object" in str(error) and not grafana.requests


def test_too_many_requests_wait(grafana):
    grafana.limit = 1
    query(grafana, "up")

    error = refused(grafana, "up")

    assert not error.permanent and error.status == 429 and error.retry_after == 1.0


@pytest.mark.parametrize(
    "answer",
    [{"results": []}, {"results": {"B": {}}}, {"results": {"A": {"frames": [{"schema": {}}]}}}],
)
def test_an_answer_that_is_not_grafanas_is_a_permanent_failure(grafana, answer):
    grafana.broken = answer

    assert refused(grafana).permanent
