"""Drill 7: a corpus of invalid configuration files, each rejected with its problem named.

"Nothing lost" here: the database holds exactly what the last valid file put there. Each file in
tests/faults/configs/ starts with ``# expect: <text>``, which the error must contain.
"""

from pathlib import Path

import pytest

from pulse import configfile
from pulse.models import Component, NotificationChannel, Organization, Subscriber
from tests.support.cli import pulse

CORPUS = sorted((Path(__file__).parent / "configs").glob("*.yaml"))
VALID = Path(__file__).parents[1] / "fixtures" / "acme.yaml"


def snapshot():
    return [
        [o.__data__ for o in Organization.select().order_by(Organization.id)],
        [c.__data__ for c in Component.select().order_by(Component.id)],
        [c.__data__ for c in NotificationChannel.select().order_by(NotificationChannel.id)],
        [s.__data__ for s in Subscriber.select().order_by(Subscriber.id)],
    ]


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_an_invalid_file_is_rejected_naming_the_problem_and_changes_nothing(path, database):
    configfile.apply(configfile.load(VALID.read_text()))
    before = snapshot()
    expected = path.read_text().splitlines()[0].removeprefix("# expect: ")

    rejected = pulse("apply", "-f", str(path), "--prune")

    assert rejected.returncode == 2, rejected.stdout
    assert rejected.stderr.startswith(f"pulse: {path} is not valid, nothing was changed:\n")
    assert expected in rejected.stderr
    assert snapshot() == before
