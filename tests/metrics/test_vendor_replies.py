"""What a vendor's reply can do, whatever it says: every integration against its local fake, which
forges the replies of a hostile vendor, proxy or gateway (`tests.support.hostile`).

A reply never puts the request's credentials into a text, in any of their forms, nor more than one
short line; however malformed, it ends as a value, as no data, or as an `ApiError`, never as
another exception; and no wait it asks for is unbounded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pulse import configfile
from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support import hostile
from tests.support.cli import pulse
from tests.support.datadog import Datadog
from tests.support.grafana import Grafana
from tests.support.jsonapi import JsonApi
from tests.support.newrelic import NewRelic
from tests.support.pingdom import Pingdom
from tests.support.prometheus import PrometheusApi

LONGEST = 400  # characters of an error text: a few words of Pulse and 300 quoted of the vendor

Reply = tuple[int, Any, dict[str, str]]


@dataclasses.dataclass
class Vendor:
    """One integration's fake, its settings, and how its API words an error and a set of values."""

    fake: JsonApi
    settings: dict[str, Any]
    text: str
    error: Callable[[int, str], Reply]  # (HTTP status, message)
    values: Callable[[list[Any]], Reply]  # one series, or row, per value

    def query(self, **options: Any) -> Sample:
        return INTEGRATIONS[self.kind].query(self.settings, self.text, options, AddressPolicy(), 5)

    @property
    def kind(self) -> str:
        return type(self.fake).__name__.lower().removesuffix("api")

    def forge(self, reply: Callable[[dict[str, str]], Reply]) -> None:
        self.fake.forge = reply


def prometheus(fake: PrometheusApi) -> Vendor:
    def error(status: int, message: str) -> Reply:
        return status, {"status": "error", "errorType": "unavailable", "error": message}, {}

    def values(numbers: list[Any]) -> Reply:
        result = [{"metric": {"series": str(i)}, "value": [time.time(), n]} for i, n in enumerate(numbers)]
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}, {}

    settings = {"url": fake.url, "username": fake.username, "password": fake.password}
    return Vendor(fake, settings, "pulse_latency_ms", error, values)


def datadog(fake: Datadog) -> Vendor:
    def error(status: int, message: str) -> Reply:
        return status, ({"status": "error", "error": message} if status == 200 else {"errors": [message]}), {}

    def values(numbers: list[Any]) -> Reply:
        series = [{"metric": "m", "pointlist": [[time.time() * 1000, n]]} for n in numbers]
        return 200, {"status": "ok", "series": series}, {}

    settings = {"url": fake.url, "api_key": fake.api_key, "app_key": fake.app_key}
    return Vendor(fake, settings, "avg:api.latency{*}", error, values)


def newrelic(fake: NewRelic) -> Vendor:
    def error(status: int, message: str) -> Reply:
        failure = {"message": message, "extensions": {"errorClass": "SERVER_ERROR"}}
        return status, {"errors": [failure], "data": None}, {}

    def values(numbers: list[Any]) -> Reply:
        rows = [{"facet": str(i), "count": n} for i, n in enumerate(numbers)]
        return 200, {"data": {"actor": {"account": {"nrql": {"results": rows}}}}}, {}

    settings = {"url": fake.url, "account_id": fake.account_id, "api_key": fake.api_key}
    return Vendor(fake, settings, "SELECT count(*) FROM Transaction FACET host", error, values)


def grafana(fake: Grafana) -> Vendor:
    def error(status: int, message: str) -> Reply:
        if status == 200:
            return 200, {"results": {"A": {"status": 500, "error": message}}}, {}
        return status, {"message": message}, {}

    def values(numbers: list[Any]) -> Reply:
        fields = [{"name": "Time", "type": "time"}] + [{"name": f"v{i}", "type": "number"} for i in range(len(numbers))]
        frame = {"schema": {"fields": fields}, "data": {"values": [[time.time() * 1000]] + [[n] for n in numbers]}}
        return 200, {"results": {"A": {"status": 200, "frames": [frame]}}}, {}

    settings = {"url": fake.url, "bearer_token": fake.token, "datasource": fake.prometheus}
    return Vendor(fake, settings, "up", error, values)


def pingdom(fake: Pingdom) -> Vendor:
    def error(status: int, message: str) -> Reply:
        if status == 200:  # a status Pingdom does not document is its text too
            return 200, {"check": {"id": 1, "status": message, "lastresponsetime": 58}}, {}
        return status, {"error": {"statuscode": status, "statusdesc": "Error", "errormessage": message}}, {}

    def values(numbers: list[Any]) -> Reply:
        [number] = numbers  # one check, one value
        return 200, {"check": {"id": 1, "status": "up", "lastresponsetime": number}}, {}

    settings = {"url": fake.url, "bearer_token": fake.token}
    return Vendor(fake, settings, "5811286", error, values)


KINDS = {
    "prometheus": (PrometheusApi, prometheus),
    "datadog": (Datadog, datadog),
    "newrelic": (NewRelic, newrelic),
    "grafana": (Grafana, grafana),
    "pingdom": (Pingdom, pingdom),
}
SERIES = [kind for kind in KINDS if kind != "pingdom"]  # those whose answers can hold several series


@contextlib.contextmanager
def vendor(kind: str) -> Iterator[Vendor]:
    fake_class, make = KINDS[kind]
    with fake_class() as fake:
        yield make(fake)


def failure(vendor: Vendor, **options: Any) -> ApiError:
    with pytest.raises(ApiError) as raised:
        vendor.query(**options)
    return raised.value


def assert_quoted(text: str, seen: list[str]) -> None:
    """``text`` repeats no credential the fake was sent, and is one short line."""
    assert seen, "the fake was sent no credentials"
    for secret in seen:
        assert secret not in text
    assert len(text) <= LONGEST and "\n" not in text, text[:400]


# --- a reply that repeats the credentials -------------------------------------------------------


@pytest.mark.parametrize("status", [200, 503])
@pytest.mark.parametrize("kind", KINDS)
def test_a_reply_that_repeats_the_credentials_is_quoted_without_them(kind, status):
    seen: list[str] = []

    def repeat(headers: dict[str, str]) -> Reply:
        seen.extend(hostile.credentials(headers))
        return answering.error(status, hostile.echo(headers))

    with vendor(kind) as answering:
        answering.forge(repeat)
        error = failure(answering)

    assert_quoted(str(error), seen)
    assert "upstream refused the request with ***" in str(error)


def test_new_relic_column_names_are_quoted():
    seen: list[str] = []

    def columns(headers: dict[str, str]) -> Reply:
        seen.extend(hostile.credentials(headers))
        rows = [{hostile.echo(headers): 1, "count": 2}]
        return 200, {"data": {"actor": {"account": {"nrql": {"results": rows}}}}}, {}

    with vendor("newrelic") as answering:
        answering.forge(columns)
        error = failure(answering)

    assert error.permanent and "the query's rows have 2 numeric columns" in str(error)
    assert_quoted(str(error), seen)


# --- a reply no API gives -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_json_nested_without_end_is_not_the_apis_json(kind):
    with vendor(kind) as answering:
        answering.forge(lambda headers: (200, hostile.DEEP, {}))
        error = failure(answering)

    assert error.permanent
    assert str(error).endswith("answered something that is not its API's JSON")


@pytest.mark.parametrize("kind", KINDS)
def test_an_integer_past_the_largest_float_is_no_data(kind):
    with vendor(kind) as answering:
        answering.forge(lambda headers: answering.values([hostile.BIG]))

        assert answering.query() == Sample(None, "the value is +Inf")


@pytest.mark.parametrize("kind", SERIES)
def test_series_whose_sum_is_past_the_largest_float_are_no_data_and_their_mean_a_value(kind):
    with vendor(kind) as answering:
        answering.forge(lambda headers: answering.values([hostile.HUGE, hostile.HUGE]))

        assert answering.query(aggregate="sum") == Sample(None, "the value is +Inf")
        assert answering.query(aggregate="avg") == Sample(hostile.HUGE, "avg of 2 series")


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_after_that_is_not_a_time_waits_a_second(kind):
    with vendor(kind) as answering:
        answering.forge(lambda headers: (429, {"error": "slow down"}, {"Retry-After": "soon"}))
        error = failure(answering)

    assert not error.permanent and error.status == 429 and error.retry_after == 1.0


@pytest.mark.parametrize(("reset", "wait"), [("nan", 1.0), ("inf", 1200.0), ("-1e999", 0.0)])
def test_a_datadog_reset_that_is_not_a_number_of_seconds_is_bounded(reset, wait):
    with vendor("datadog") as answering:
        answering.forge(lambda headers: (429, {"errors": ["Rate limit"]}, {"X-RateLimit-Reset": reset}))
        error = failure(answering)

    assert error.retry_after == wait


def test_a_pingdom_header_cannot_stop_requests_for_more_than_20_minutes():
    check = {"check": {"id": 1, "status": "up", "lastresponsetime": 58}}
    with vendor("pingdom") as answering:
        answering.forge(lambda headers: (200, check, {"Req-Limit-Short": hostile.ENDLESS}))
        assert answering.query() == Sample(58.0)

        assert answering.query() == Sample(None, "Pingdom's request limit is used up; it resets in 1200 s")

    with vendor("pingdom") as answering:
        answering.forge(lambda headers: (429, {"error": {}}, {"Req-Limit-Long": hostile.ENDLESS}))
        assert failure(answering).retry_after == 1200.0


# --- the command line ---------------------------------------------------------------------------

FILE = """
organizations:
  - slug: acme
    name: Acme
    integrations:
      - {{key: prom, type: prometheus, url: "{url}", username: {username}, password: '{password}'}}
"""


def test_pulse_metrics_query_says_what_a_hostile_reply_did_in_one_line(database):
    seen: list[str] = []

    def repeat(headers: dict[str, str]) -> Reply:
        seen.extend(hostile.credentials(headers))
        return 200, {"status": "error", "errorType": "unavailable", "error": hostile.echo(headers)}, {}

    with vendor("prometheus") as answering:
        fake = answering.fake
        configfile.apply(configfile.load(FILE.format(url=fake.url, username=fake.username, password=fake.password)))
        said = {}
        for name, reply in [
            ("echo", repeat),
            ("deep", lambda headers: (200, hostile.DEEP, {})),
            ("big", lambda headers: answering.values([hostile.BIG])),
            ("soon", lambda headers: (429, b"", {"Retry-After": "soon"})),
        ]:
            answering.forge(reply)
            ran = pulse("metrics", "query", "prom", "up")
            said[name] = (ran.returncode, ran.stdout + ran.stderr)

    assert said["echo"][0] == 1 and said["echo"][1].startswith("pulse: Prometheus: unavailable: upstream refused")
    assert said["deep"] == (2, "pulse: Prometheus answered something that is not its API's JSON\n")
    assert said["big"] == (1, "no data: the value is +Inf\n")
    assert said["soon"] == (1, "pulse: Prometheus answered 429\n")
    for _, output in said.values():
        assert output.count("\n") == 1 and len(output) <= LONGEST
        assert not any(secret in output for secret in seen)
