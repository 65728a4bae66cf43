"""`pulse check`, `pulse status` and `pulse apply` as a user runs them."""

import json

from pulse.models import Incident
from tests.support.cli import pulse
from tests.support.worker import ROOT


def test_check_a_url_with_conditions_and_no_database(target):
    url = target.url("/health")
    passing = pulse("check", "--url", url, "-c", "[STATUS] == 200", "-c", "[BODY].db.latency_ms < 100", "--json")
    report = json.loads(passing.stdout)
    assert passing.returncode == 0, passing.stderr
    assert (report["success"], report["status"], report["observed"]) == (True, 200, "OPERATIONAL")
    assert [c["resolved"] for c in report["conditions"]] == [
        "[STATUS] (200) == 200",
        "[BODY].db.latency_ms (12.5) < 100",
    ]

    failing = pulse("check", "--url", url, "-c", "[BODY].status == DOWN")
    assert failing.returncode == 1
    assert failing.stdout.splitlines()[0] == "FAIL  [BODY].status (UP) == DOWN"

    invalid = pulse("check", "--url", url, "-c", "[STATUS] => 200")
    assert invalid.returncode == 2
    assert invalid.stderr.startswith("pulse: [STATUS] => 200: ")

    neither = pulse("check")
    assert (neither.returncode, neither.stderr) == (
        2,
        "pulse: give a component KEY or a target (--url or --tcp or --dns or --icmp or --cert), just one\n",
    )


def test_check_a_configured_component_then_see_its_status(make_component, target):
    make_component(target, key="api", status="MAJOR_OUTAGE")
    Incident.create(organization=1, component=1, title="Public API is down", automatic=True)

    result = pulse("check", "api")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  [BODY].status (UP) == UP" in result.stdout
    assert pulse("check", "acme/api").returncode == 0
    missing = pulse("check", "nope")
    assert (missing.returncode, missing.stderr) == (2, "pulse: no component 'nope' (see `pulse status`)\n")

    [row] = json.loads(pulse("status", "--json").stdout)
    assert (row["organization"], row["key"], row["status"]) == ("acme", "api", "MAJOR_OUTAGE")
    assert row["incident"]["title"] == "Public API is down"
    assert "MAJOR_OUTAGE" in pulse("status").stdout


def test_apply_then_status(database):
    result = pulse("apply", "-f", str(ROOT / "tests" / "fixtures" / "acme.yaml"))
    applied = "applied 1 organization(s): 2 component(s) created, 0 updated, 0 channel(s), 0 subscriber(s)\n"
    assert (result.returncode, result.stdout) == (0, applied)
    rows = json.loads(pulse("status", "--json").stdout)
    assert [(r["key"], r["status"], r["last_checked_at"]) for r in rows] == [
        ("api", "OPERATIONAL", None),
        ("www", "OPERATIONAL", None),
    ]
