"""`pulse apply`: declaring organizations and components from a file."""

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import Component, ExtractedValue, MaintenanceWindow, Organization
from tests.support.env import ENV
from tests.support.worker import ROOT

ACME = (Path(__file__).parent / "fixtures" / "acme.yaml").read_text()


def apply(text, prune=False):
    return configfile.apply(configfile.load(text), prune=prune)


def test_the_documented_example_is_applied(database):
    report = apply(ACME)

    assert (report.organizations, report.components_created, report.components_updated) == (1, 2, 0)
    acme = Organization.get(Organization.slug == "acme")
    api = Component.get(Component.organization == acme, Component.key == "api")
    assert (api.name, api.type, api.url, api.method) == (
        "Public API",
        "ENDPOINT",
        "https://api.acme.example/health",
        "GET",
    )
    assert (api.interval_seconds, api.timeout_ms, api.failure_threshold, api.success_threshold) == (30, 5000, 3, 2)
    assert api.headers == {"Accept": "application/json"}
    assert api.conditions == ["[STATUS] == 200", "[BODY].status == UP", "[RESPONSE_TIME] < 800"]
    assert api.extract == {"db_latency": "[BODY].db.latency_ms"}
    assert [(v.name, v.path) for v in ExtractedValue.select()] == [("db_latency", "[BODY].db.latency_ms")]
    www = Component.get(Component.key == "www")
    assert (www.interval_seconds, www.conditions, www.next_check_at) == (60, ["[STATUS] < 400"], None)


def test_applying_twice_changes_nothing_more(database):
    apply(ACME)
    before = [(c.id, c.name, c.interval_seconds) for c in Component.select().order_by(Component.id)]
    report = apply(ACME)
    after = [(c.id, c.name, c.interval_seconds) for c in Component.select().order_by(Component.id)]
    assert (report.components_created, report.components_updated) == (0, 2)
    assert before == after
    assert Organization.select().count() == 1 and ExtractedValue.select().count() == 1


def test_a_changed_interval_reschedules_and_a_kept_one_does_not(database):
    apply(ACME)
    Component.update(next_check_at=Component.created_at).execute()
    apply(ACME.replace("interval: 30s", "interval: 15s"))
    assert Component.get(Component.key == "api").next_check_at is None
    assert Component.get(Component.key == "www").next_check_at is not None


def test_prune_deletes_what_the_file_no_longer_names(database):
    apply(ACME)
    apply(ACME.replace("slug: acme", "slug: other"))
    without_www = ACME[: ACME.index("      - key: www")]

    kept = apply(without_www)
    assert (kept.components_deleted, Component.select().count()) == (0, 4)

    pruned = apply(without_www, prune=True)
    assert (pruned.organizations_deleted, pruned.components_deleted) == (1, 1)
    assert [(c.organization.slug, c.key) for c in Component.select()] == [("acme", "api")]


def test_extracted_values_and_maintenance_follow_the_file(database):
    apply(
        ACME.replace(
            '        extract: {db_latency: "[BODY].db.latency_ms"}',
            '        extract: {queue: "[BODY].queue.depth"}\n'
            "        maintenance:\n"
            "          - {start: 2026-12-01T02:00:00Z, end: 2026-12-01T03:00:00Z, title: Upgrade}",
        )
    )
    assert [v.name for v in ExtractedValue.select()] == ["queue"]
    [window] = MaintenanceWindow.select()
    assert (window.title, window.ends_at - window.starts_at) == ("Upgrade", timedelta(hours=1))
    assert window.starts_at.isoformat() == "2026-12-01T02:00:00+00:00"


INVALID = [
    ("organizations: [", "not valid YAML: line"),
    ("organizations: \x1b[2J", "not valid YAML: unacceptable character #x001b: control characters are not allowed"),
    ("organizations: \ud800", "the file is not UTF-8 text (byte 0xed at offset 15)"),  # a lone surrogate
    ("- just\n- a list", "must be a mapping"),
    ("organisations: []", "organisations: unknown field"),
    ("organizations: []", "organizations: List should have at least 1 item"),
    (ACME.replace("key: api", "key: API!"), "organizations[0].components[0].key: String should match pattern"),
    (
        ACME.replace("interval: 30s", "interval: 5s"),
        "organizations[0].components[0].interval: must be between 15s and 24h, not 5s",
    ),
    (ACME.replace("interval: 30s", "interval: 2w"), "is not a duration"),
    (ACME.replace("interval: 30s", "interval: 2d"), "must be between 15s and 24h, not 48h"),
    (ACME.replace("timeout: 5s", "timeout: 2m"), "timeout: must be between 1s and 1m, not 2m"),
    (ACME.replace("https://api.acme.example/health", "ftp://api.acme.example"), "url: must be an http"),
    (ACME.replace("https://api.acme.example/health", "http://"), "must be an http:// or https:// URL with a host"),
    (ACME.replace("method: GET", "method: FETCH"), "method: 'FETCH' is not one of"),
    (ACME.replace('"[STATUS] == 200"', '"[STATUS] =! 200"'), "conditions: [STATUS] =! 200"),
    (ACME.replace('"[STATUS] == 200"', '"[STATUSS] == 200"'), "[STATUSS] == 200"),
    (
        ACME.replace("failure_threshold: 3", "failure_threshold: 0"),
        "failure_threshold: Input should be greater than or equal to 1",
    ),
    (
        ACME.replace("failure_threshold: 3", "failure_threshold: many"),
        "failure_threshold: Input should be a valid integer",
    ),
    (ACME.replace("auto_incident: true", "auto_incident: perhaps"), "auto_incident: Input should be a valid boolean"),
    (ACME.replace("key: www", "key: api"), "component key 'api' appears twice"),
    (
        ACME.replace("        interval: 1m", "        interval: 1m\n        colour: red"),
        "components[1].colour: unknown field",
    ),
    (ACME.replace("        method: GET", "        method: GET\n        method: POST"), "duplicate key 'method'"),
    (ACME.replace("{Accept: application/json}", "{'Bad Header': x}"), "'Bad Header' is not a valid header name"),
    (ACME.replace("db_latency:", "1st:"), "'1st' is not a valid value name"),
    (ACME.replace("url: http://www.acme.example/", "type: endpoint"), "components[1]: an endpoint needs a url"),
    (ACME.replace("name: Website", "name: " + "x" * 201), "name: String should have at most 200 characters"),
]


@pytest.mark.parametrize("text, problem", INVALID)
def test_an_invalid_file_is_rejected_with_the_problem_named(text, problem):
    with pytest.raises(ConfigError) as error:
        configfile.load(text)
    assert problem in str(error.value)


SECRET = "s3cr3t-t0k3n"
HIDDEN = "not valid (the reason would repeat the value of ${SECRET}, from the environment)"


@pytest.mark.parametrize(
    ("value", "changes", "problem"),
    [
        (SECRET, [("interval: 30s", "interval: ${SECRET}")], f"organizations[0].components[0].interval: {HIDDEN}"),
        ("2d", [("interval: 30s", "interval: ${SECRET}")], f"organizations[0].components[0].interval: {HIDDEN}"),
        (SECRET, [("method: GET", "method: ${SECRET}")], f"organizations[0].components[0].method: {HIDDEN}"),
        (
            SECRET,
            [("key: api", f"key: {SECRET}"), ("key: www", "key: ${SECRET}")],
            "organizations[0].components: component key '${SECRET}' appears twice",
        ),
        (
            "x" * 300,
            [("name: Website", "name: ${SECRET}")],
            "components[1].name: String should have at most 200 characters",
        ),
    ],
    ids=["not-a-duration", "too-long", "method", "twice", "pydantic"],
)
def test_a_value_from_the_environment_is_never_repeated(monkeypatch, value, changes, problem):
    monkeypatch.setenv("SECRET", value)
    text = ACME
    for old, new in changes:
        text = text.replace(old, new)
    with pytest.raises(ConfigError) as error:
        configfile.load(text)
    assert problem in str(error.value)
    assert value not in str(error.value) and "48h" not in str(error.value)


def test_every_problem_is_listed_and_nothing_is_written(database):
    apply(ACME)
    before = [(c.key, c.interval_seconds, c.url) for c in Component.select().order_by(Component.key)]
    broken = ACME.replace("interval: 30s", "interval: 1s").replace("http://www.acme.example/", "nope")
    path = ROOT / ".pytest_cache" / "broken.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(broken.replace("name: Acme", "name: Acme Renamed"))

    result = subprocess.run(
        [sys.executable, "-m", "pulse.cli", "apply", "-f", str(path)],
        cwd=ROOT,
        env={**ENV, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert f"pulse: {path} is not valid, nothing was changed:" in result.stderr
    assert "organizations[0].components[0].interval: must be between 15s and 24h, not 1s" in result.stderr
    assert "organizations[0].components[1].url: must be an http:// or https:// URL" in result.stderr
    assert [(c.key, c.interval_seconds, c.url) for c in Component.select().order_by(Component.key)] == before
    assert Organization.get().name == "Acme"
