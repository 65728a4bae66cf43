"""Pulse driven as an outside client drives it, with plain HTTP requests only: on call configured by
`pulse apply` from a file, a token made by `pulse tokens create`, then an http component made
through the API over a local target, seen up, down with its incident open and its page's alert,
the incident updated, the alert acknowledged, the incident resolved, the component up again and
deleted, and the audit naming each write. Real workers, scheduler and service; every wait is a poll
with a deadline. About 50 s (47 s measured, and 6 s of workers, scheduler and service starting and
stopping): three checks 15 s apart, the shortest interval, are most of it (up, down, up again)."""

import requests

from tests.support.cli import pulse
from tests.support.serve import running
from tests.support.wait import wait_for

FILE = """
organizations:
  - slug: acme
    name: Acme
    people:
      - {key: carol, name: Carol, phone: "+14155550102"}
    schedules:
      - key: primary
        time_zone: UTC
        layers: [{rotation: weekly, handoff: monday 09:00, start: 2026-01-05, members: [carol]}]
    escalation_policies:
      - {key: default, levels: [{targets: [{schedule: primary}], wait: 5m}], contact: [sms]}
"""
CHECK = 30.0  # seconds: a check is due every 15 s (the shortest interval); a new one within seconds
POLL = 0.25  # seconds between the polls of a wait: within the token's rate (10 requests a second)


def test_a_component_goes_down_is_paged_answered_resolved_and_deleted_through_the_api(
    tmp_path, database, rabbit, vendors, provider_env, workers, schedulers, settings, target
):
    declared = tmp_path / "pulse.yaml"
    declared.write_text(FILE)
    applied = pulse("apply", "-f", str(declared))
    assert applied.returncode == 0, applied.stderr
    made = pulse("tokens", "create", "--org", "acme", "--scope", "read", "--scope", "write", "--scope", "incidents",
                 "--scope", "oncall", "--name", "lifecycle")  # fmt: skip
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    workers(threads=2, env=provider_env)
    schedulers()

    with running(settings) as service:
        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {token}"
        base = f"http://127.0.0.1:{service.port}/api/v1"

        def get(path):
            answer = api.get(base + path, timeout=10)
            assert answer.status_code == 200, answer.text
            return answer.json()

        def until(probe, what):
            return wait_for(probe, what, timeout=CHECK, every=POLL)

        def component_is(status):
            shown = get("/components/api")
            return shown["last_checked_at"] is not None and shown["status"] == status

        body = {
            "key": "api",
            "name": "API",
            "url": target.url("/health"),
            "interval": "15s",
            "failure_threshold": 1,
            "success_threshold": 1,
            "escalation_policy": "default",
        }
        created = api.post(f"{base}/components", json=body, timeout=10)
        assert created.status_code == 201, created.text
        until(lambda: component_is("OPERATIONAL"), "the component checked and up")

        target.answer("/health", status=503, body=b"down")
        until(lambda: component_is("MAJOR_OUTAGE"), "the component down")
        [incident] = until(lambda: get("/incidents?status=open")["incidents"], "its incident open")
        assert (incident["component"], incident["automatic"]) == ("api", True)

        update = {"status": "IDENTIFIED", "message": "The API's database is out of connections."}
        updated = api.post(f"{base}/incidents/{incident['id']}/updates", json=update, timeout=10)
        assert updated.status_code == 201, updated.text

        [alert] = until(lambda: get("/alerts?status=triggered")["alerts"], "the page's alert")
        assert (alert["incident"], alert["component"], alert["policy"]) == (incident["id"], "api", "default")
        until(lambda: "paged" in [s["kind"] for s in get(f"/alerts/{alert['id']}")["timeline"]], "carol paged")
        acknowledged = api.post(f"{base}/alerts/{alert['id']}/acknowledge", json={"by": "carol"}, timeout=10)
        assert acknowledged.status_code == 200, acknowledged.text
        assert acknowledged.json()["status"] == "acknowledged"

        # Resolved by the people who fixed it before the next check says so: resolved after the
        # recovery, the incident could already be resolved by that check (an automatic one is).
        resolution = {"status": "RESOLVED", "message": "The pool is larger; the API answers again."}
        resolved = api.post(f"{base}/incidents/{incident['id']}/updates", json=resolution, timeout=10)
        assert resolved.status_code == 201, resolved.text
        target.answer("/health", status=200, body=b'{"status": "UP"}')
        until(lambda: component_is("OPERATIONAL"), "the component up again")
        assert get(f"/incidents/{incident['id']}")["resolved_at"] is not None
        assert get(f"/alerts/{alert['id']}")["status"] == "resolved"
        assert get("/incidents?status=open")["incidents"] == []

        deleted = api.delete(f"{base}/components/api", timeout=10)
        assert deleted.status_code == 204, deleted.text
        assert api.get(f"{base}/components/api", timeout=10).status_code == 404
        audit = get("/audit")["audit"]

    assert [(a["action"], a["object_type"], a["object_key"], a["status"]) for a in reversed(audit)] == [
        ("create", "component", "api", 201),
        ("update", "incident", str(incident["id"]), 201),
        ("acknowledge", "alert", str(alert["id"]), 200),
        ("update", "incident", str(incident["id"]), 201),
        ("delete", "component", "api", 204),
    ]
    assert {a["token_id"] for a in audit} == {int(made.stdout.split()[2])}
