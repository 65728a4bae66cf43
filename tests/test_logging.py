"""Pulse's JSON logs (`pulse.logging`): even at DEBUG, no statement's parameters (secrets among them)."""

import os
import subprocess
import sys

from tests.support.env import ENV
from tests.support.worker import ROOT

QUERY = """
from pulse import logging
from pulse.config import get_settings
from pulse.db import db, setup_database

logging.configure("DEBUG")
setup_database(get_settings())
db.execute_sql("SELECT %s", ("s3cret-webhook-token",))
print("queried")
"""


def test_debug_logs_never_carry_a_statements_parameters(settings):
    ran = subprocess.run(
        [sys.executable, "-c", QUERY], cwd=ROOT, env={**os.environ, **ENV}, capture_output=True, text=True, timeout=60
    )

    assert ran.returncode == 0 and ran.stdout == "queried\n", ran.stderr
    assert "s3cret-webhook-token" not in ran.stderr
