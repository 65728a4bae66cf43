"""The URLs jobs ping (`pulse.heartbeats.routes`) on the real service: each kind recorded once
committed, an unknown token or another last part writing nothing, and a ping recovering a monitor
through a worker."""

import pytest
import requests

from pulse.components.status import MAJOR_OUTAGE, OPERATIONAL
from pulse.heartbeats import ping
from pulse.models import Component, HeartbeatMonitor, HeartbeatPing, Incident
from tests.heartbeats.conftest import TOKEN, reasons
from tests.support.serve import running
from tests.support.wait import wait_for


@pytest.fixture
def service(settings):
    with running(settings) as served:
        served.url = lambda path: f"http://127.0.0.1:{served.port}{path}"
        yield served


@pytest.mark.parametrize(
    ("method", "path", "kind", "exit_status"),
    [("GET", "", "success", None), ("HEAD", "", "success", None), ("POST", "/fail", "fail", None),
     ("POST", "/start", "start", None), ("GET", "/0", "success", 0), ("POST", "/2", "fail", 2)],
)  # fmt: skip
def test_each_kind_is_recorded_and_answered_ok(monitor, service, method, path, kind, exit_status):
    component = monitor()
    answer = requests.request(method, service.url(f"/ping/{TOKEN}{path}"), data=b"x" * 20_000, timeout=10)
    assert answer.status_code == 200 and answer.headers["Ping-Body-Limit"] == str(ping.BODY_LIMIT)
    assert method == "HEAD" or answer.text == "OK"
    (recorded,) = HeartbeatPing.select()
    assert (recorded.component_id, recorded.kind, recorded.exit_status) == (component.id, kind, exit_status)
    assert len(bytes(recorded.body)) == ping.BODY_LIMIT  # kept up to the limit, never refused below the bound


@pytest.mark.parametrize(
    ("path", "status"),
    [(f"/ping/{TOKEN}/256", 400), (f"/ping/{TOKEN}/log", 400), ("/ping/" + "u" * 40, 404), ("/ping/short", 404),
     ("/ping/" + "u" * 40 + "/log", 404)],
)  # fmt: skip
def test_an_unknown_token_or_another_last_part_writes_nothing(monitor, service, path, status):
    component = monitor()
    assert requests.post(service.url(path), data=b"hello", timeout=10).status_code == status
    assert HeartbeatPing.select().count() == 0
    assert HeartbeatMonitor.get(HeartbeatMonitor.component == component.id).last_ping_at is None


def test_a_body_over_the_bound_is_refused_and_nothing_written(monitor, service):
    monitor()
    assert requests.post(service.url(f"/ping/{TOKEN}"), data=b"x" * 100_001, timeout=10).status_code == 413
    assert requests.post(service.url("/ping/" + "u" * 40), data=b"x" * 100_001, timeout=10).status_code == 404
    assert HeartbeatPing.select().count() == 0


def test_a_ping_over_http_recovers_a_monitor_through_a_worker(monitor, service, workers):
    component = monitor(period_s=1, grace_s=1)
    assert requests.get(service.url(f"/ping/{TOKEN}"), timeout=10).status_code == 200
    workers("--queues", "uptime", threads=1)
    wait_for(lambda: Component.get_by_id(component.id).status == MAJOR_OUTAGE, "the silent monitor down", timeout=20)
    assert requests.post(service.url(f"/ping/{TOKEN}/0"), timeout=10).text == "OK"
    wait_for(lambda: Component.get_by_id(component.id).status == OPERATIONAL, "the monitor up", timeout=20)
    wait_for(lambda: Incident.get().resolved_at is not None, "its incident resolved")


def test_a_run_started_over_http_and_never_finished_sends_the_monitor_down_through_a_worker(monitor, service, workers):
    component = monitor(period_s=3600, grace_s=1)  # the next run in an hour: only the start can be missed
    assert requests.post(service.url(f"/ping/{TOKEN}/start"), timeout=10).text == "OK"
    workers("--queues", "uptime", threads=1)
    wait_for(lambda: Component.get_by_id(component.id).status == MAJOR_OUTAGE, "the unfinished run down", timeout=20)
    assert reasons()[-1].endswith(", no success or failure within the grace (1s)")
    assert requests.get(service.url(f"/ping/{TOKEN}"), timeout=10).text == "OK"  # it finishes, late
    wait_for(lambda: Component.get_by_id(component.id).status == OPERATIONAL, "the monitor up", timeout=20)


@pytest.mark.parametrize("body", [b"exit\x00 3", b"\xff\xfe not UTF-8", b"\xed\xa0\x80 a lone surrogate", b"\\u0000"])
def test_a_body_postgresql_could_not_hold_as_text_is_kept_as_it_came(monitor, service, body):
    monitor()
    assert requests.post(service.url(f"/ping/{TOKEN}/fail"), data=body, timeout=10).text == "OK"
    assert bytes(HeartbeatPing.get().body) == body  # bytes, never decoded
    assert requests.post(service.url("/ping/" + "u" * 40), data=body, timeout=10).status_code == 404
