"""What a vendor's reply can do, whatever it says: every integration against its local fake, which
forges the replies of a hostile vendor, proxy or gateway (`tests.support.hostile`).

A reply, however malformed, ends as a value, as no data, or as an `ApiError`, never as another
exception; and no wait it asks for is unbounded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support import hostile
from tests.support.datadog import Datadog
from tests.support.grafana import Grafana
from tests.support.jsonapi import JsonApi
from tests.support.newrelic import NewRelic
from tests.support.pingdom import Pingdom
from tests.support.prometheus import PrometheusApi

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
