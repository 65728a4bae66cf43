"""The `pulse` command line as an operator runs it: a process of its own, with the tests' settings."""

import subprocess
import sys

from tests.support.env import ENV
from tests.support.worker import ROOT


def pulse(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``pulse ARGS…`` with the tests' settings plus ``env``; its output is captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "pulse.cli", *args],
        cwd=ROOT,
        env={**ENV, "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
