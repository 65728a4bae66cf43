"""The Pingdom integration against a strict local fake of its API 3.1."""

import pytest

from pulse.metrics.integrations import INTEGRATIONS, Sample
from pulse.net import AddressPolicy
from pulse.net.api import ApiError
from tests.support.pingdom import Pingdom

PINGDOM = INTEGRATIONS["pingdom"]
CHECK = 5811286


@pytest.fixture
def pingdom():
    with Pingdom() as fake:
        yield fake


def query(pingdom, text=str(CHECK), token=None, **options):
    settings = {"url": pingdom.url, "bearer_token": token or pingdom.token}
    return PINGDOM.query(settings, text, options, AddressPolicy(), 5)


def refused(pingdom, text=str(CHECK), **arguments):
    with pytest.raises(ApiError) as caught:
        query(pingdom, text, **arguments)
    return caught.value


def test_the_value_is_the_last_response_time_of_an_up_check(pingdom):
    pingdom.checks[CHECK] = {"status": "up", "lastresponsetime": 58}

    assert query(pingdom) == Sample(58.0)
    [request] = pingdom.requests
    assert request["path"] == f"/api/3.1/checks/{CHECK}"
    assert request["headers"]["authorization"] == f"Bearer {pingdom.token}"


@pytest.mark.parametrize(
    ("status", "response_time", "state"),
    [
        ("up", Sample(58.0), Sample(1.0)),
        ("down", Sample(None, "the check is down"), Sample(0.0)),
        ("unconfirmed_down", Sample(None, "the check is unconfirmed_down"), Sample(0.0)),
        ("paused", Sample(None, "the check is paused"), Sample(None, "the check is paused")),
        ("unknown", Sample(None, "the check is unknown"), Sample(None, "the check is unknown")),
    ],
)
def test_each_status_as_a_response_time_and_as_a_state(pingdom, status, response_time, state):
    pingdom.checks[CHECK] = {"status": status, "lastresponsetime": 58}

    assert query(pingdom) == response_time
    assert query(pingdom, field="status") == state


def test_pingdoms_refusals_are_permanent_with_its_message(pingdom):
    forbidden = refused(pingdom, "123")
    unauthorized = refused(pingdom, token="wrong-token-wrong-token")

    assert forbidden.permanent and str(forbidden) == (
        "Pingdom answered 403: Something went wrong! This user does not have access to this check."
    )
    assert unauthorized.permanent and str(unauthorized) == "Pingdom answered 401: Invalid token"


def test_a_used_up_limit_stops_requests_until_it_resets(pingdom):
    pingdom.checks[CHECK] = {"status": "up", "lastresponsetime": 58}
    pingdom.remaining["short"] = 1
    pingdom.resets["short"] = 600

    assert query(pingdom) == Sample(58.0)  # the answer says: 0 remaining, reset in 600 s
    assert query(pingdom) == Sample(None, "Pingdom's request limit is used up; it resets in 600 s")
    assert len(pingdom.requests) == 1


def test_a_429_waits_for_the_reset(pingdom):
    pingdom.remaining["long"] = 0
    pingdom.resets["long"] = 90

    error = refused(pingdom)

    assert not error.permanent and error.status == 429 and error.retry_after == 90.0
    assert query(pingdom).value is None and len(pingdom.requests) == 1


@pytest.mark.parametrize(
    ("text", "options", "problem"),
    [("api.acme.example", {}, "the id of a check"), ("42", {"field": "uptime"}, "lastresponsetime or status")],
)
def test_a_query_that_is_not_a_check_id_or_field_is_refused_before_sending(pingdom, text, options, problem):
    error = refused(pingdom, text, **options)

    assert error.permanent and problem in str(error) and not pingdom.requests
