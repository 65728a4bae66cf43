"""`pulse cleanup --dry-run` and `pulse cleanup run`, and `retention` in the configuration file:
what operators run and write."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import CleanupRun, FailedMessage, Organization, utcnow
from tests.support.cli import pulse

FILE = """
organizations:
  - slug: acme
    name: Acme
    retention: {uptime_checks: 30d, rollups: 400d}
  - slug: globex
    name: Globex
"""


def dead_letter(name, age):
    FailedMessage.create(message_id=name, queue_name="uptime", actor_name="check", error_type="E",
                         error_message="", traceback="", failed_at=utcnow() - age)  # fmt: skip


def test_retention_is_stored_as_the_file_sets_it(database):
    configfile.apply(configfile.load(FILE))
    assert {o.slug: o.retention for o in Organization.select()} == {
        "acme": {"uptime_checks": 30 * 86400, "rollups": 400 * 86400},
        "globex": {},  # the defaults, whatever a later release makes them
    }
    configfile.apply(configfile.load(FILE.replace("retention: {uptime_checks: 30d, rollups: 400d}", "")))
    assert Organization.get(Organization.slug == "acme").retention == {}


@pytest.mark.parametrize(
    ("retention", "problem"),
    [
        ("{rollups: 7d}", "retention.rollups: must be between 31d and 3650d, not 7d"),
        ("{uptime_checks: 12h}", "retention.uptime_checks: must be between 1d and 3650d, not 0.5d"),
        ("{uptime_checks: 2w}", "retention.uptime_checks: '2w' is not a duration"),
        ("{checks: 30d}", "retention.checks: unknown field"),
    ],
)
def test_a_retention_out_of_bounds_is_refused_with_its_place(database, retention, problem):
    with pytest.raises(ConfigError) as refused:
        configfile.load(FILE.replace("{uptime_checks: 30d, rollups: 400d}", retention))
    assert f"organizations[0].{problem}" in str(refused.value)


def test_a_dry_run_says_what_would_go_and_deletes_nothing(database):
    dead_letter("old", timedelta(days=31))
    dead_letter("young", timedelta(days=29))
    shown = pulse("cleanup", "--dry-run", "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    tables = {t["table"]: t for t in report["tables"]}
    assert tables["failed_message"]["rows"] == 1 and tables["failed_message"]["rule"] == "dead_letters"
    assert tables["uptime_check"]["rows"] == 0 and report["rows"] == 1
    assert report["last_success"] is None
    assert FailedMessage.select().count() == 2
    table = pulse("cleanup", "--dry-run")
    assert table.returncode == 0, table.stderr
    assert "would delete 1 row(s)" in table.stdout
    assert "last successful cleanup: never" in table.stdout


def test_run_deletes_now_and_records_the_run(database):
    dead_letter("old", timedelta(days=31))
    done = pulse("cleanup", "run", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["rows"], report["finished"]) == (1, True)
    run = CleanupRun.get()
    assert (run.id, run.succeeded, run.deleted) == (report["run"], True, {"failed_message": 1})
    assert report["last_success"] is not None
    assert [m.message_id for m in FailedMessage.select()] == []


@pytest.mark.parametrize("args", [[], ["--json"], ["--dry-run", "run"]])
def test_a_cleanup_without_what_to_do_is_a_usage_error(database, args):
    refused = pulse("cleanup", *args)
    assert refused.returncode == 2
    assert refused.stderr.startswith("pulse: ") and "Traceback" not in refused.stderr
