"""Grafana's webhook signature (`pulse.sources.signature`) on the real service: a grafana source
with a signing secret takes a request signed as Grafana signs it (HMAC-SHA256 over the raw body,
after ``<timestamp>:`` when a timestamp header is set) and refuses any other with 401 and one
WARNING line that never holds the secret; its body is not parsed before."""

import hashlib
import hmac
import logging
import time

import pytest
import requests

from pulse import configfile
from pulse.errors import ConfigError
from pulse.inbound import jsonbody
from pulse.models import AlertEvent, AlertSource
from tests.sources import bodies
from tests.sources.conftest import EVENTS_TOKEN, FILE, GRAFANA_TOKEN
from tests.support.serve import running

SECRET = "s3cret-of-grafana-0123456789"
SIGNED_FILE = FILE.replace(
    '{key: grafana, name: Grafana, kind: grafana, token: "${GRAFANA_TOKEN}", escalation_policy: default}',
    """{key: grafana, name: Grafana, kind: grafana, token: "${GRAFANA_TOKEN}", escalation_policy: default,
         signature: {secret: "${GRAFANA_SIGNING_SECRET}", header: X-Signed, timestamp_header: X-Signed-At}}
      - {key: plain, kind: grafana, token: "${PLAIN_TOKEN}", escalation_policy: default,
         signature: {secret: "${GRAFANA_SIGNING_SECRET}"}}""",
)
PLAIN_TOKEN = "p" * 32  # its source signs without a timestamp, in Grafana's default header
PLAIN = "X-Grafana-Alerting-Signature"


@pytest.fixture
def signed(database, monkeypatch):
    for name, value in [("EVENTS_TOKEN", EVENTS_TOKEN), ("ALERTMANAGER_TOKEN", "a" * 32),
                        ("GRAFANA_TOKEN", GRAFANA_TOKEN), ("PLAIN_TOKEN", PLAIN_TOKEN),
                        ("GRAFANA_SIGNING_SECRET", SECRET)]:  # fmt: skip
        monkeypatch.setenv(name, value)
    configfile.apply(configfile.load(SIGNED_FILE))


@pytest.fixture
def service(settings):
    with running(settings) as served:
        yield f"http://127.0.0.1:{served.port}/alerts/grafana"


def grafanas(body, timestamp=None, secret=SECRET):
    """Grafana's signature, computed as its webhook notifier does."""
    prefix = f"{timestamp}:".encode() if timestamp is not None else b""
    return hmac.new(secret.encode(), prefix + body, hashlib.sha256).hexdigest()


def post(service, body, token, headers):
    sent = {"Content-Type": "application/json", "Authorization": f"Bearer {token}", **headers}
    return requests.post(service, data=body, headers=sent, timeout=10)


def test_a_request_signed_as_grafana_signs_is_recorded(signed, service):
    body, now = bodies.grafana(), str(int(time.time()))
    assert post(service, body, GRAFANA_TOKEN, {"X-Signed": grafanas(body, now), "X-Signed-At": now}).text == "OK"
    plain = bodies.grafana(alertname="CPU")
    assert post(service, plain, PLAIN_TOKEN, {PLAIN: grafanas(plain)}).text == "OK"
    assert [e.summary for e in AlertEvent.select().order_by(AlertEvent.id)] == ["92% used", "92% used"]
    assert AlertSource.get(AlertSource.key == "plain").signature == {
        "secret": SECRET, "header": PLAIN, "timestamp_header": None,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("token", "headers", "reason"),
    [
        (PLAIN_TOKEN, lambda body, now: {}, f"no {PLAIN} header"),
        (PLAIN_TOKEN, lambda body, now: {PLAIN: grafanas(b"{}")}, f"no valid {PLAIN}"),  # another body's
        (PLAIN_TOKEN, lambda body, now: {PLAIN: grafanas(body, secret="another-secret-0123")}, f"no valid {PLAIN}"),
        (PLAIN_TOKEN, lambda body, now: {PLAIN: "é" * 64}, f"no valid {PLAIN}"),
        (PLAIN_TOKEN, lambda body, now: {PLAIN: grafanas(body, now)}, f"no valid {PLAIN}"),  # signed with a timestamp
        (GRAFANA_TOKEN, lambda body, now: {"X-Signed": grafanas(body)}, "no X-Signed-At header of Unix seconds"),
        (GRAFANA_TOKEN, lambda body, now: {"X-Signed": grafanas(body), "X-Signed-At": "soon"},
         "no X-Signed-At header of Unix seconds"),
        (GRAFANA_TOKEN, lambda body, now: {"X-Signed": grafanas(body), "X-Signed-At": str(now)}, "no valid X-Signed"),
        (GRAFANA_TOKEN, lambda body, now: {"X-Signed": grafanas(body, now), "X-Signed-At": str(now + 1)},
         "no valid X-Signed"),  # signed at another time than it says
        (GRAFANA_TOKEN, lambda body, now: {"X-Signed": grafanas(body, now - 301), "X-Signed-At": str(now - 301)},
         "a X-Signed-At over 5 minutes from now"),
        (GRAFANA_TOKEN, lambda body, now: {"X-Signed": grafanas(body, now + 301), "X-Signed-At": str(now + 301)},
         "a X-Signed-At over 5 minutes from now"),
    ],
)  # fmt: skip
def test_any_other_request_is_401_with_one_warning_and_its_body_not_parsed(
    signed, service, caplog, monkeypatch, token, headers, reason
):
    parsed = []
    monkeypatch.setattr(jsonbody, "loads", lambda body: parsed.append(body) or (None, 0))
    body = bodies.grafana()
    answer = post(service, body, token, headers(body, int(time.time())))
    assert (answer.status_code, answer.text) == (401, f"{reason[0].upper()}{reason[1:]}.\n")
    assert AlertEvent.select().count() == 0 and parsed == []
    [line] = [r for r in caplog.records if r.name == "pulse.inbound"]
    assert line.levelno == logging.WARNING and line.getMessage().endswith(f"answered 401: {reason}.")
    assert SECRET not in caplog.text


def test_a_wrong_token_is_404_signed_or_not(signed, service):
    body, now = bodies.grafana(), str(int(time.time()))
    assert post(service, body, "x" * 32, {"X-Signed": grafanas(body, now), "X-Signed-At": now}).status_code == 404
    assert post(service, body, "x" * 32, {}).status_code == 404


def test_an_unsigned_grafana_source_takes_requests_as_before(sources, service):
    assert post(service, bodies.grafana(), GRAFANA_TOKEN, {}).text == "OK"


def test_only_a_grafana_source_takes_a_signature(signed):
    events = FILE.replace(
        "        kind: events\n", "        kind: events\n        signature: {secret: 0123456789abcdef}\n"
    )
    with pytest.raises(ConfigError, match="only a grafana source takes a signature"):
        configfile.load(events)
    short = SIGNED_FILE.replace('"${GRAFANA_SIGNING_SECRET}"}}', "short}}")
    with pytest.raises(ConfigError, match=r"alert_sources\[3\]\.signature\.secret"):
        configfile.load(short)
