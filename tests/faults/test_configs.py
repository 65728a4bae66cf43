"""Drill 7: a corpus of invalid configuration files, each rejected with its problem named.

"Nothing lost" here: the database holds exactly what the last valid file put there. Each file in
tests/faults/configs/ starts with ``# expect: <text>``, which the error must contain.
"""

import random
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from pulse import configfile
from pulse.errors import ConfigError
from pulse.models import Component, NotificationChannel, Organization, Subscriber
from tests.support.cli import pulse
from tests.support.env import ENV
from tests.support.worker import ROOT

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


def test_a_file_over_5_mib_is_refused_having_read_no_more(database):
    """`-f /dev/zero` never ends: the command reads 5 MiB and a byte, in a process that may not
    grow past 1 GiB."""

    def at_most_1_gib() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    rejected = subprocess.run(
        [sys.executable, "-m", "pulse.cli", "apply", "-f", "/dev/zero"],
        cwd=ROOT,
        env={**ENV, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=at_most_1_gib,
    )

    assert (rejected.returncode, rejected.stderr) == (
        2,
        "pulse: /dev/zero is not valid, nothing was changed:\n  the file is over 5 MiB\n",
    )


def test_no_refusal_repeats_a_secret(database):
    rejected = pulse("apply", "-f", str(Path(__file__).parent / "configs" / "55-nul-in-a-secret.yaml"))
    assert rejected.returncode == 2
    assert "s3cr3t" not in rejected.stdout + rejected.stderr


@pytest.mark.parametrize(
    "content",
    [
        bytes(range(256)) * 4,  # binary garbage
        "organizations:\n  - {slug: acme, name: Acme}\n".encode("utf-16"),  # UTF-16, with its byte order mark
        "organizations:\n  - {slug: acme, name: Café}\n".encode("latin-1"),
    ],
    ids=["binary", "utf-16", "latin-1"],
)
def test_a_file_that_is_not_utf8_is_rejected_naming_the_byte(content, tmp_path, database):
    configfile.apply(configfile.load(VALID.read_text()))
    before = snapshot()
    path = tmp_path / "config.yaml"
    path.write_bytes(content)

    rejected = pulse("apply", "-f", str(path))

    assert rejected.returncode == 2, rejected.stdout
    assert "is not UTF-8 text (byte 0x" in rejected.stderr and "Traceback" not in rejected.stderr
    assert snapshot() == before


def test_no_file_makes_loading_fail_otherwise_than_with_a_configuration_error():
    """Thousands of damaged copies of a valid file (bytes flipped, cut, repeated): each is either
    valid or refused with `ConfigError`, never another exception (a traceback for the operator)."""
    valid = VALID.read_bytes()
    rng = random.Random(20261201)
    for _ in range(3000):
        damaged = bytearray(valid)
        for _ in range(rng.randint(1, 8)):
            position = rng.randrange(len(damaged))
            action = rng.randrange(4)
            if action == 0:
                damaged[position] = rng.randrange(256)
            elif action == 1:
                del damaged[position : position + rng.randint(1, 40)]
            elif action == 2:
                damaged[position:position] = rng.choice([b"\x00", b"[", b"{", b"? ", b"*a", b"&a ", b"\\", b'"', b":"])
            else:
                damaged[position:position] = damaged[position : position + rng.randint(1, 200)]
        try:
            configfile.load(bytes(damaged))
        except ConfigError:
            pass
