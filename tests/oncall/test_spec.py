"""People, schedules and escalation policies in the configuration file: what a file may say, every
problem named with its path, nothing written unless the whole file is valid, and what apply writes."""

import re
from datetime import datetime
from pathlib import Path

import pytest

from pulse import configfile
from pulse.cli.apply import summary
from pulse.errors import ConfigError
from pulse.models import Component, EscalationPolicy, OnCallSchedule, Person
from pulse.oncall import rotation
from pulse.oncall.schedules import of
from tests.support.cli import pulse

FILE = """
organizations:
  - slug: acme
    name: Acme
    people:
      - {key: alice, name: Alice, email: alice@acme.example, phone: "+14155550100", time_zone: Europe/Berlin}
      - {key: bob, name: Bob, email: bob@acme.example}
      - {key: carol, name: Carol, phone: "+14155550102"}
      - {key: dave, name: Dave, email: dave@acme.example}
    schedules:
      - key: primary
        name: Primary
        time_zone: America/New_York
        layers:
          - rotation: weekly
            handoff: monday 09:00
            start: 2026-01-05
            members: [alice, bob, carol]
          - every: 12h
            handoff: 17:30
            start: 2026-01-05
            members: [dave]
            restrict: [sat-sun 00:00-24:00]
        overrides:
          - {person: bob, from: "2026-12-24T00:00:00-05:00", until: "2026-12-26T00:00:00-05:00"}
      - key: secondary
        time_zone: UTC
        layers: [{rotation: daily, handoff: "00:00", start: 2026-01-01, members: [dave, bob]}]
    escalation_policies:
      - key: default
        levels:
          - {targets: [{schedule: primary}], wait: 5m}
          - {targets: [{person: dave}, {schedule: secondary}], wait: 10m}
        repeat: 2
        contact: [sms, email]
    components:
      - {key: api, name: API, url: "http://127.0.0.1:9/", escalation_policy: default}
      - {key: web, name: Web, url: "http://127.0.0.1:9/"}
"""

# The same organization with schedules that never change hands, for tests that page now: level 1
# pages carol (by sms: she has a phone only), level 2 dave and bob (by email), whatever the day.
STEADY = FILE.replace(
    """          - rotation: weekly
            handoff: monday 09:00
            start: 2026-01-05
            members: [alice, bob, carol]
          - every: 12h
            handoff: 17:30
            start: 2026-01-05
            members: [dave]
            restrict: [sat-sun 00:00-24:00]
        overrides:
          - {person: bob, from: "2026-12-24T00:00:00-05:00", until: "2026-12-26T00:00:00-05:00"}
""",
    """          - {rotation: weekly, handoff: monday 09:00, start: 2026-01-05, members: [carol]}
""",
).replace("members: [dave, bob]", "members: [bob]")


def refused(text: str) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        configfile.load(text)
    return str(raised.value).splitlines()


def test_a_valid_file_loads_with_times_of_day_as_text():
    [organization] = configfile.load(FILE).organizations
    primary, secondary = organization.schedules
    assert primary.layers[1].handoff == "17:30"  # unquoted: YAML 1.1 would read the number 1050
    assert primary.layers[1].every == "12h" and primary.layers[0].every is None
    [policy] = organization.escalation_policies
    assert policy.stored_levels() == [
        {"targets": [{"schedule": "primary"}], "wait_seconds": 300},
        {"targets": [{"person": "dave"}, {"schedule": "secondary"}], "wait_seconds": 600},
    ]
    assert (policy.repeat, policy.contact, secondary.name) == (2, ["sms", "email"], None)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            "members: [alice, bob, carol]",
            "members: [alice, zed]",
            "organizations[0].schedules[0].layers[0].members[1] names 'zed', who is not in people",
        ),
        (
            "{person: bob, from",
            "{person: bobby, from",
            "organizations[0].schedules[0].overrides[0].person names 'bobby', who is not in people",
        ),
        (
            "{schedule: secondary}",
            "{schedule: tertiary}",
            "organizations[0].escalation_policies[0].levels[1].targets[1] names the schedule 'tertiary', "
            "which is not in schedules",
        ),
        (
            "{person: dave}, {schedule",
            "{person: eve}, {schedule",
            "organizations[0].escalation_policies[0].levels[1].targets[0] names the person 'eve', who is not in people",
        ),
        (
            "escalation_policy: default",
            "escalation_policy: nightly",
            "organizations[0].components[0].escalation_policy names 'nightly', which is not in escalation_policies",
        ),
        (
            "contact: [sms, email]",
            "contact: [sms]",
            "organizations[0].escalation_policies[0] pages 'bob' (through the schedule primary) by sms, but 'bob' "
            "has no phone: give them one, or add a channel they have to contact",
        ),
        (
            "contact: [sms, email]",
            "contact: [sms, sms]",
            "organizations[0].escalation_policies[0].contact: contact 'sms' appears twice",
        ),
        (
            "contact: [sms, email]",
            "contact: [pager]",
            "organizations[0].escalation_policies[0].contact[0]: Input should be 'sms', 'email' or 'push'",
        ),
        (
            "handoff: 17:30",
            'handoff: "02:30"',
            # the first such day from today on: 2027-03-14 when written
            "organizations[0].schedules[0].layers[1].handoff: the handoff due at 02:30 on 20",
        ),
        (
            'rotation: daily, handoff: "00:00"',
            'rotation: daily, handoff: "monday 00:00"',
            "organizations[0].schedules[1].layers[0].handoff: a weekday only applies to a weekly rotation",
        ),
        (
            "time_zone: America/New_York",
            "time_zone: America/Gotham",
            "organizations[0].schedules[0].time_zone: 'America/Gotham' is not a time zone",
        ),
        (
            "time_zone: Europe/Berlin",
            "time_zone: CET+1",
            "organizations[0].people[0].time_zone: 'CET+1' is not a time zone",
        ),
        (
            "          - every: 12h\n",
            "          - every: 12h\n            rotation: daily\n",
            "organizations[0].schedules[0].layers[1]: give `rotation: daily` or `rotation: weekly`, or `every`",
        ),
        ("every: 12h", "every: 30m", "organizations[0].schedules[0].layers[1].every: 30m is shorter than 1h"),
        ("rotation: weekly", "rotation: monthly", "organizations[0].schedules[0].layers[0].rotation: Input should be"),
        ("handoff: monday 09:00", "handoff: 25:00", "organizations[0].schedules[0].layers[0].handoff: 25:00: hours go"),
        (
            "restrict: [sat-sun 00:00-24:00]",
            "restrict: [sat-sun 09:00-09:00]",
            "organizations[0].schedules[0].layers[1].restrict: 09:00-09:00 is empty",
        ),
        (
            'from: "2026-12-24T00:00:00-05:00"',
            'from: "2026-12-24T00:00:00"',
            "organizations[0].schedules[0].overrides[0]: from and until need an offset",
        ),
        (
            'until: "2026-12-26T00:00:00-05:00"',
            'until: "2026-12-23T00:00:00-05:00"',
            "organizations[0].schedules[0].overrides[0]: until must be after from",
        ),
        ("wait: 5m", "wait: 30s", "organizations[0].escalation_policies[0].levels[0].wait: must be between 1m and 24h"),
        (
            "repeat: 2",
            "repeat: 10",
            "organizations[0].escalation_policies[0].repeat: Input should be less than or equal",
        ),
        (
            "{targets: [{schedule: primary}], wait: 5m}",
            "{targets: [{schedule: primary, person: bob}], wait: 5m}",
            "organizations[0].escalation_policies[0].levels[0].targets[0]: a target is a person or a schedule",
        ),
        (
            "{key: bob, name: Bob, email: bob@acme.example}",
            "{key: bob, name: Bob}",
            "organizations[0].people[1]: a person needs a way to be paged: email, phone or push",
        ),
        (
            'phone: "+14155550102"',
            'phone: "4155550102"',
            "organizations[0].people[2].phone: '4155550102' is not a phone number in E.164 form",
        ),
        (
            "{key: dave, name: Dave",
            "{key: bob, name: Dave",
            "organizations[0].people: person key 'bob' appears twice",
        ),
        (
            "      - key: secondary\n",
            "      - key: primary\n",
            "organizations[0].schedules: schedule key 'primary' appears twice",
        ),
    ],
)
def test_a_problem_is_named_with_its_path(old, new, problem):
    assert old in FILE
    problems = refused(FILE.replace(old, new, 1))
    assert any(line.startswith(problem) for line in problems), problems


def test_every_reference_problem_is_its_own_line():
    problems = refused(FILE.replace("members: [alice, bob, carol]", "members: [x, y]"))
    assert problems == [
        "organizations[0].schedules[0].layers[0].members[0] names 'x', who is not in people",
        "organizations[0].schedules[0].layers[0].members[1] names 'y', who is not in people",
    ]


def test_apply_writes_people_schedules_policies_and_the_component_link(database):
    configfile.apply(configfile.load(FILE))
    assert {(p.key, p.name, p.email, p.phone, p.time_zone) for p in Person.select()} == {
        ("alice", "Alice", "alice@acme.example", "+14155550100", "Europe/Berlin"),
        ("bob", "Bob", "bob@acme.example", None, "UTC"),
        ("carol", "Carol", None, "+14155550102", "UTC"),
        ("dave", "Dave", "dave@acme.example", None, "UTC"),
    }
    policy = EscalationPolicy.get()
    assert (policy.key, policy.name, policy.repeat, policy.contact) == ("default", "default", 2, ["sms", "email"])
    assert policy.levels[1] == {"targets": [{"person": "dave"}, {"schedule": "secondary"}], "wait_seconds": 600}
    links = {c.key: c.escalation_policy_id for c in Component.select()}
    assert links == {"api": policy.id, "web": None}

    primary = OnCallSchedule.get(OnCallSchedule.key == "primary")
    assert primary.name == "Primary"
    schedule = of(primary)  # read back, it says what the file says
    assert rotation.on_call(schedule, _at("2026-12-25T12:00:00-05:00")) == ("bob",)
    assert rotation.on_call(schedule, _at("2026-12-02T12:00:00-05:00")) == ("carol",)
    assert rotation.on_call(schedule, _at("2026-12-05T12:00:00-05:00")) == ("dave",)


def test_apply_again_changes_what_changed_and_prune_deletes_what_is_gone(database):
    configfile.apply(configfile.load(FILE))
    first = {p.key: p.id for p in EscalationPolicy.select()}
    changed = FILE.replace("repeat: 2", "repeat: 0").replace(", escalation_policy: default", "")
    changed = changed.replace("      - {key: dave, name: Dave, email: dave@acme.example}\n", "")
    changed = changed.replace("{person: dave}, ", "").replace("members: [dave, bob]", "members: [bob]")
    changed = changed.replace("members: [dave]", "members: [bob]")
    configfile.apply(configfile.load(changed))
    assert EscalationPolicy.get().repeat == 0 and {p.key: p.id for p in EscalationPolicy.select()} == first
    assert Component.get(Component.key == "api").escalation_policy_id is None
    assert Person.select().count() == 4  # without prune, dave stays

    report = configfile.apply(configfile.load(changed), prune=True)
    assert (report.people_deleted, report.schedules_deleted, report.escalation_policies_deleted) == (1, 0, 0)
    assert sorted(p.key for p in Person.select()) == ["alice", "bob", "carol"]

    bare = changed.split("    people:")[0] + "    components: []\n"
    report = configfile.apply(configfile.load(bare), prune=True)
    assert (report.people_deleted, report.schedules_deleted, report.escalation_policies_deleted) == (3, 2, 1)
    assert summary(report, prune=True).endswith("; pruned 0 organization(s), 2 component(s), 0 channel(s), "
        "0 subscriber(s), 3 people, 2 schedule(s), 1 escalation policy, 0 integration(s), 0 metric(s), "
        "0 calculated metric(s), 0 alert source(s)")  # fmt: skip
    assert (Person.select().count(), OnCallSchedule.select().count(), EscalationPolicy.select().count()) == (0, 0, 0)


def test_pulse_apply_says_what_it_wrote_of_on_call_and_heartbeats(database, tmp_path):
    path = tmp_path / "acme.yaml"
    path.write_text(FILE + f"      - {{key: backup, name: Backup, type: heartbeat, period: 1h, token: {'b' * 40}}}\n")

    result = pulse("apply", "-f", str(path))

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        "applied 1 organization(s): 3 component(s) created, 0 updated, 0 channel(s), 0 subscriber(s), "
        "1 heartbeat monitor(s), 4 people, 2 schedule(s), 1 escalation policy\n"
    )


def test_a_pruned_policy_unlinks_its_components(database):
    configfile.apply(configfile.load(FILE))
    without = FILE.split("    escalation_policies:")[0] + (
        '    components:\n      - {key: api, name: API, url: "http://127.0.0.1:9/"}\n'
        '      - {key: web, name: Web, url: "http://127.0.0.1:9/"}\n'
    )
    configfile.apply(configfile.load(without), prune=True)
    assert EscalationPolicy.select().count() == 0
    assert Component.get(Component.key == "api").escalation_policy_id is None


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_the_docs_on_call_example_loads_and_says_who_is_on_call():
    page = (Path(__file__).parents[2] / "docs" / "oncall.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)
    indented = "".join(f"    {line}\n" for line in block.splitlines())
    [organization] = configfile.load("organizations:\n  - slug: acme\n    name: Acme\n" + indented).organizations
    primary = organization.schedules[0].schedule()
    assert rotation.on_call(primary, _at("2026-12-25T03:00:00-05:00")) == ("bob",)  # the override
    assert rotation.on_call(primary, _at("2026-12-27T03:00:00-05:00")) == ("dave",)  # the weekend layer
    assert organization.components[0].escalation_policy == "default"


def test_a_handoff_from_the_environment_is_never_repeated(monkeypatch):
    """Its schedule refuses it in a line of its own, at the handoff's path."""
    monkeypatch.setenv("HANDOFF", "02:30")
    assert refused(FILE.replace("handoff: 17:30", "handoff: ${HANDOFF}")) == [
        "organizations[0].schedules[0].layers[1].handoff: not valid (the reason would repeat the value of "
        "${HANDOFF}, from the environment)"
    ]
