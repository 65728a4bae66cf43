"""The benchmark scripts (`tests/benchmarks/`) are run by hand, not by the suite: each must at least
load, its imports found (a helper moved from one module to another once broke seven of them)."""

import subprocess
import sys

from tests.support.worker import ROOT

SCRIPTS = sorted((ROOT / "tests/benchmarks").glob("*.py"))

# Each script loaded as a module, not run (their main starts servers), in one process: the
# scripts set the environment variables of their own database, so not in the tests' process.
LOAD = """
import runpy, sys
failed = []
for path in sys.argv[1:]:
    try:
        runpy.run_path(path, run_name="loaded")
    except Exception as error:
        failed.append(f"{path}: {type(error).__name__}: {error}")
print("\\n".join(failed))
"""


def test_every_benchmark_script_loads():
    assert len(SCRIPTS) > 10
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD, *map(str, SCRIPTS)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "", loaded.stdout
