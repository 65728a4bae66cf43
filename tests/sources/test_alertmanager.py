"""A real Alertmanager fed by a real Prometheus pages the on-call person through `pulse serve` and
real workers: a rule that fires opens one alert and sends one page to the fake SMS provider, and the
alert resolves when Alertmanager says the group has. Alertmanager's retries after a 5xx (here: the
event committed, the answer lost on the way back) page no one twice.

Without ``prometheus`` or ``prometheus-alertmanager`` this skips; with PULSE_REQUIRE_TOOLS=1 (CI)
it fails instead."""

from __future__ import annotations

import http.server
import threading

import pytest
import requests

from pulse.models import AlertEvent, Notification, OnCallAlert
from tests.sources.conftest import ALERTMANAGER_TOKEN
from tests.support.alertmanager import Alertmanager, require
from tests.support.prometheus import Prometheus
from tests.support.serve import running
from tests.support.wait import wait_for
from tests.support.worker import free_port

RULES = [
    {
        "alert": "PulseTestDown",
        "expr": "pulse_test_up == 0",
        "labels": {"severity": "page"},
        "annotations": {"summary": "series {{ $labels.series }} is down"},
    }
]


class LosingAnswers:
    """An HTTP relay to ``upstream`` that hands each POST on, then answers 503 instead of the
    upstream's answer to the first ``lose`` of them: the sender retries what was recorded."""

    def __init__(self, upstream: str, lose: int) -> None:
        self.upstream, self.lose, self.forwarded = upstream, lose, 0
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {name: self.headers[name] for name in ("Authorization", "Content-Type")}
                answer = requests.post(relay.upstream + self.path, data=body, headers=headers, timeout=10)
                relay.forwarded += 1
                status = 503 if relay.forwarded <= relay.lose else answer.status_code
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def service(settings):
    with running(settings) as served:
        yield f"http://127.0.0.1:{served.port}"


def sms_pages(vendors) -> int:
    return len(vendors.received("twilio"))


def test_a_rule_that_fires_pages_once_and_resolves_with_alertmanager(
    sources, service, rabbit, vendors, provider_env, workers
):
    require("prometheus", "prometheus-alertmanager")
    workers("--queues", "oncall", "notifications", threads=1, env=provider_env)
    relay = LosingAnswers(service, lose=2)
    try:
        with (
            Alertmanager(f"{relay.url}/alerts/alertmanager", bearer_token=ALERTMANAGER_TOKEN) as alertmanager,
            Prometheus(rules=RULES, alertmanager=alertmanager.url) as prometheus,
        ):
            prometheus.set("pulse_test_up", a=0)
            wait_for(lambda: relay.forwarded >= 3, "Alertmanager's firing webhook, answered 503 twice, then OK")
            wait_for(lambda: Notification.select().where(Notification.status == "sent").count() == 1, "the page")
            alert = OnCallAlert.get()
            assert (alert.title, alert.dedup_key) == ("series a is down", '{}:{alertname="PulseTestDown"}')
            assert AlertEvent.select().count() == 3  # the first body and its two retries, each recorded
            prometheus.set("pulse_test_up", a=1)
            wait_for(lambda: OnCallAlert.get().status == "resolved", "the alert resolved by Alertmanager")
    finally:
        relay.close()
    assert sms_pages(vendors) == 1
    assert vendors.received("twilio")[0].form["To"] == "+14155550102"  # carol, on call on level 1
    assert "PAGE: series a is down" in vendors.received("twilio")[0].form["Body"]
    assert OnCallAlert.select().count() == 1
    assert AlertEvent.select().where(~AlertEvent.applied).count() == 0
