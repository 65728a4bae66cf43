"""`pulse apply` of people, schedules and policies, and `pulse oncall who` / `shifts`: what operators run."""

import json

import pytest

from pulse import configfile
from pulse.models import Component, Incident, OnCallAlert, OnCallSchedule, Organization, Person, utcnow
from pulse.oncall import alerts
from tests.oncall.test_spec import FILE, STEADY
from tests.support.cli import pulse


@pytest.fixture
def applied(database, tmp_path):
    path = tmp_path / "pulse.yaml"
    path.write_text(FILE + FILE.replace("slug: acme", "slug: globex").split("organizations:\n")[1])
    done = pulse("apply", "-f", str(path))
    assert done.returncode == 0, done.stderr
    assert "4 component(s) created" in done.stdout
    return path


def test_who_is_on_call_on_every_schedule_with_since_until_and_next(applied):
    shown = pulse("oncall", "who", "--at", "2026-12-25T12:00:00-05:00", "--json")
    assert shown.returncode == 0, shown.stderr
    rows = {(r["organization"], r["schedule"]): r for r in json.loads(shown.stdout)}
    assert sorted(rows) == [("acme", "primary"), ("acme", "secondary"), ("globex", "primary"), ("globex", "secondary")]
    primary = rows["acme", "primary"]
    assert (primary["person"], primary["person_name"], primary["source"]) == ("bob", "Bob", "overrides[0]")
    assert (primary["since"], primary["until"]) == ("2026-12-24T05:00:00+00:00", "2026-12-26T05:00:00+00:00")
    # After the override: Saturday 26th, the weekend layer's dave.
    assert primary["next"] == {"person": "dave", "person_name": "Dave", "from": "2026-12-26T05:00:00+00:00"}
    secondary = rows["acme", "secondary"]  # daily at 00:00 UTC from 2026-01-01 (day 0): dave on even days
    assert (secondary["person"], secondary["since"]) == ("dave", "2026-12-25T00:00:00+00:00")  # day 358


def test_who_reads_a_time_without_offset_in_the_schedules_zone_and_prints_a_table(applied):
    shown = pulse("oncall", "who", "acme/primary", "--at", "2026-12-07T08:59")
    assert shown.returncode == 0, shown.stderr
    [header, row] = shown.stdout.splitlines()
    assert header.split()[:4] == ["schedule", "on", "call", "since"]
    # Monday 08:59 in New York: carol's week (alice, bob, carol from 2026-01-05) again since dave's
    # weekend layer ended at midnight; alice takes over at 09:00.
    assert row.split() == [
        "acme/primary",
        "Carol",
        "(carol)",
        "2026-12-07",
        "00:00",
        "EST",
        "2026-12-07",
        "09:00",
        "EST",
        "Alice",
        "(alice)",
        "America/New_York",
    ]


def test_shifts_across_a_dst_change_keep_the_handoff_at_local_time(applied):
    shown = pulse("oncall", "shifts", "acme/primary", "--from", "2027-03-13", "--to", "2027-03-17", "--json")
    assert shown.returncode == 0, shown.stderr
    assert [(s["person"], s["from"], s["until"], s["source"]) for s in json.loads(shown.stdout)] == [
        ("dave", "2027-03-13T05:00:00+00:00", "2027-03-15T04:00:00+00:00", "layers[1]"),  # 47 h: clocks go forward
        ("bob", "2027-03-15T04:00:00+00:00", "2027-03-15T13:00:00+00:00", "layers[0]"),
        ("carol", "2027-03-15T13:00:00+00:00", "2027-03-17T04:00:00+00:00", "layers[0]"),  # Monday 09:00 EDT
    ]
    table = pulse("oncall", "shifts", "acme/primary", "--from", "2027-03-13", "--to", "2027-03-17")
    assert "2027-03-15 09:00 EDT" in table.stdout and "Carol (carol)" in table.stdout


def test_a_name_is_shown_as_written_never_as_markup(applied):
    Person.update(name="Alice [/x] [bold]").where(Person.key == "alice").execute()
    shown = pulse(
        "oncall", "shifts", "acme/primary", "--from", "2026-12-07", "--to", "2026-12-08", FORCE_COLOR="1", COLUMNS="300"
    )
    assert shown.returncode == 0, shown.stderr
    assert "Alice [/x] [bold] (alice)" in shown.stdout

    shown = pulse("oncall", "who", "acme/primary", "--at", "2026-12-07T10:00")
    assert shown.returncode == 0, shown.stderr
    assert "Alice [/x] [bold] (alice)" in shown.stdout


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("who", "tertiary"), "pulse: no schedule 'tertiary' (pulse oncall who lists them)"),
        (("who", "primary"), "pulse: 'primary' names schedules of several organizations: acme/primary, globex/primary"),
        (("who", "acme/primary", "--at", "tomorrow"), "pulse: 'tomorrow' is not a time: expected ISO 8601"),
        (
            ("who", "acme/primary", "--at", "9999-12-31T23:00Z"),
            "pulse: 9999-12-31T23:00:00+00:00 is not between the years 1970 and 2999",
        ),
        (("shifts", "acme/primary", "--from", "0001-01-01"), "pulse: 0001-01-01T00:00:00 is not between the years"),
        (("shifts", "acme/primary", "--from", "2027-01-02", "--to", "2027-01-01"), "pulse: --to must be after --from"),
        (("shifts", "acme/primary", "--to", "2099-01-01"), "pulse: --from and --to are more than a year apart"),
    ],
)
def test_what_cannot_be_shown_is_one_line_and_exit_2(applied, args, problem):
    shown = pulse("oncall", *args)
    assert shown.returncode == 2
    assert shown.stderr.startswith(problem) and len(shown.stderr.splitlines()) == 1


def test_an_invalid_file_changes_nothing_that_was_applied(applied):
    before = [(s.key, s.layers, s.overrides) for s in OnCallSchedule.select().order_by(OnCallSchedule.id)]
    applied.write_text(
        FILE.replace("handoff: 17:30", 'handoff: "02:30"').replace("{key: bob, name: Bob", "{key: bob, name: Robert")
    )
    refused = pulse("apply", "-f", str(applied), "--prune")
    assert refused.returncode == 2
    assert "organizations[0].schedules[0].layers[1].handoff: the handoff due at 02:30 on " in refused.stderr
    assert "does not exist in America/New_York (clocks go from 02:00 to 03:00)" in refused.stderr
    assert [(s.key, s.layers, s.overrides) for s in OnCallSchedule.select().order_by(OnCallSchedule.id)] == before
    assert Person.select().where(Person.name == "Robert").count() == 0 and Person.select().count() == 8


def test_alerts_ack_and_resolve(applied):
    configfile.apply(configfile.load(STEADY))  # acme's schedules, that page carol now, whatever the day
    api = Component.get(Component.key == "api", Component.organization == Organization.get(slug="acme"))
    incident = Incident.create(organization=api.organization_id, component=api, title="API down", started_at=utcnow())
    alerts.open_alert(incident.id, utcnow())
    alert = OnCallAlert.get()

    shown = pulse("oncall", "alerts", "--json")
    assert shown.returncode == 0, shown.stderr
    [listed] = json.loads(shown.stdout)
    assert (listed["id"], listed["component"], listed["status"], listed["level"], listed["policy"]) == (
        alert.id,
        "api",
        "triggered",
        1,
        "default",
    )
    assert [(s["kind"], s.get("delivery")) for s in listed["timeline"]] == [("opened", None)] + [
        ("paged", "pending")
    ] * (len(listed["timeline"]) - 1)

    acked = pulse("oncall", "ack", str(alert.id), "--by", "alice")
    assert (acked.returncode, acked.stdout) == (0, f"alert {alert.id} acknowledged by alice: no one more is paged\n")
    again = pulse("oncall", "ack", str(alert.id))
    assert again.returncode == 0 and again.stdout.startswith(f"alert {alert.id} was acknowledged already, by alice at ")
    table = pulse("oncall", "alerts")
    assert "[acknowledged by alice (cli)]" in table.stdout.splitlines()[0]
    assert table.stdout.splitlines()[-1].endswith(
        "  acknowledged by alice (cli); 1 page(s) not sent yet were cancelled"
    )
    assert "L1/R1 Carol by sms (cancelled: not sent: the alert was acknowledged first)" in table.stdout

    resolved = pulse("oncall", "resolve", str(alert.id))
    assert resolved.stdout == f"alert {alert.id} resolved: no one more is paged\n"
    assert pulse("oncall", "alerts").stdout == "no open alerts (--all shows resolved ones)\n"
    assert json.loads(pulse("oncall", "alerts", "--all", "--json").stdout)[0]["status"] == "resolved"

    for args, problem in [
        (("ack", "999"), "pulse: no alert 999 (pulse oncall alerts lists them)\n"),
        (("ack", str(alert.id), "--by", "eve"), "pulse: no person 'eve' in the alert's organization\n"),
        (("resolve", "999"), "pulse: no alert 999 (pulse oncall alerts lists them)\n"),
    ]:
        refused = pulse("oncall", *args)
        assert (refused.returncode, refused.stderr) == (2, problem)


def test_the_ack_server_needs_its_secret(settings):
    refused = pulse("oncall", "ack-server", "--port", "1")
    assert (refused.returncode, refused.stderr) == (
        2,
        "pulse: set PULSE_ACK_SECRET (and PULSE_ACK_URL to this server's public address) first\n",
    )
