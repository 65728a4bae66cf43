"""The real Alertmanager of tests/support/alertmanager.py, fed by the real Prometheus of
tests/support/prometheus.py: a rule that fires reaches the test's server as Alertmanager's webhook,
with the bearer token; its resolution follows; a 503 gets the same body again.

Without ``prometheus`` or ``prometheus-alertmanager`` these tests skip; with PULSE_REQUIRE_TOOLS=1
(CI) they fail instead.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import pytest

from tests.support.alertmanager import Alertmanager, require
from tests.support.prometheus import Prometheus
from tests.support.target import HTTPTarget, Received

T = TypeVar("T")

PATH = "/alerts/alertmanager"
RULES = [
    {
        "alert": "PulseTestDown",
        "expr": "pulse_test_up == 0",
        "labels": {"severity": "page"},
        "annotations": {"summary": "series {{ $labels.series }} is down"},
    }
]


@dataclasses.dataclass
class Stack:
    target: HTTPTarget
    token: str
    alertmanager: Alertmanager
    prometheus: Prometheus

    def posts(self, series: str) -> list[tuple[Received, dict[str, Any]]]:
        """The webhooks received for ``series`` (its group: alerts are grouped by series too)."""
        got = [(r, json.loads(r.body)) for r in self.target.received if r.method == "POST" and r.path == PATH]
        return [(r, body) for r, body in got if body["groupLabels"].get("series") == series]

    def post(self, series: str, index: int) -> tuple[Received, dict[str, Any]] | None:
        """The ``index``-th webhook received for ``series``, if received."""
        posts = self.posts(series)
        return posts[index] if index < len(posts) else None

    def wait(self, probe: Callable[[], T], what: str) -> T:
        """Await the webhooks ``probe`` looks for; on a timeout, both daemons' logs in the error."""
        try:
            return self.target.wait_for(lambda _: probe(), what, timeout=20)
        except AssertionError as error:
            error.add_note(self.alertmanager.daemon.report("Alertmanager:") if self.alertmanager.daemon else "")
            error.add_note(self.prometheus.daemon.report("Prometheus:") if self.prometheus.daemon else "")
            raise


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """One Alertmanager and one Prometheus for the module (Prometheus takes ~5 s to start), each
    test on its own series, so its own alert group."""
    require("prometheus", "prometheus-alertmanager")
    token = "pulse-" + secrets.token_urlsafe(16)
    with (
        HTTPTarget() as target,
        Alertmanager(target.url(PATH), bearer_token=token, group_by=("alertname", "series")) as alertmanager,
        Prometheus(rules=RULES, alertmanager=alertmanager.url) as prometheus,
    ):
        yield Stack(target, token, alertmanager, prometheus)


def test_a_rule_that_fires_then_resolves_is_posted_twice(stack):
    stack.target.answer(PATH, status=200)
    stack.prometheus.set("pulse_test_up", a=0)
    request, firing = stack.wait(lambda: stack.post("a", 0), "the firing webhook")
    assert request.headers["authorization"] == f"Bearer {stack.token}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("Alertmanager/")
    assert request.body.endswith(b"\n")  # Go's json.Encoder
    assert firing["version"] == "4" and firing["status"] == "firing" and firing["receiver"] == "pulse"
    assert firing["groupKey"] == '{}:{alertname="PulseTestDown", series="a"}'
    assert firing["groupLabels"] == {"alertname": "PulseTestDown", "series": "a"}
    [alert] = firing["alerts"]
    assert alert["status"] == "firing" and alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert alert["labels"].items() >= {"alertname": "PulseTestDown", "series": "a", "severity": "page"}.items()
    assert alert["annotations"] == {"summary": "series a is down"}
    assert alert["generatorURL"].startswith(stack.prometheus.url)

    stack.prometheus.set("pulse_test_up", a=1)
    request, resolved = stack.wait(lambda: stack.post("a", 1), "the resolved webhook")
    assert request.headers["authorization"] == f"Bearer {stack.token}"
    assert resolved["status"] == "resolved" and resolved["groupKey"] == firing["groupKey"]
    [gone] = resolved["alerts"]
    assert gone["status"] == "resolved" and gone["fingerprint"] == alert["fingerprint"]
    assert gone["startsAt"] == alert["startsAt"]
    assert datetime.fromisoformat(gone["endsAt"]) > datetime.fromisoformat(gone["startsAt"])


def test_a_webhook_answered_503_is_sent_again_byte_for_byte(stack):
    stack.target.answer(PATH, status=503, body=b"busy")
    stack.prometheus.set("pulse_test_up", b=0)
    tries = stack.wait(lambda: len(stack.posts("b")) >= 2 and stack.posts("b"), "a second try of the webhook")
    assert tries[0][1]["status"] == "firing"
    assert len({request.body for request, _ in tries}) == 1, "every try has the first one's body"
    assert {request.headers["authorization"] for request, _ in tries} == {f"Bearer {stack.token}"}

    stack.target.answer(PATH, status=200)  # tries go on, the same, until one is answered 200
    count = len(tries)
    request, _ = stack.wait(lambda: stack.post("b", count), "a try after the server recovers")
    assert request.body == tries[0][0].body
