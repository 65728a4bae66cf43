"""The `pulse` command line, as an operator runs it."""

import importlib
import json
import signal
import subprocess
import sys
import threading

import psycopg
import pytest
from psycopg import sql

from pulse.cli import COMMANDS
from pulse.models import Heartbeat
from pulse.models.heartbeat import SCHEDULER
from tests.support import actors
from tests.support.cli import pulse
from tests.support.env import ENV, NAMESPACE
from tests.support.wait import wait_for
from tests.support.worker import ROOT, WorkerProcess, free_port

LOOPS = ("uptime", "metrics", "calculated-metrics", "oncall")

MIGRATIONS = "".join(f"applied {path.stem}\n" for path in sorted((ROOT / "pulse" / "migrations").glob("0*.py")))


@pytest.fixture
def fresh_database(settings):
    name = NAMESPACE + "_fresh"
    admin = psycopg.conninfo.make_conninfo(settings.database_url, dbname="postgres")

    def drop():
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))

    drop()
    yield settings.database_url.rsplit("/", 1)[0] + "/" + name
    drop()


def test_each_command_is_listed_with_the_module_that_defines_it():
    defined = {}
    for path in sorted((ROOT / "pulse" / "cli").glob("[!_]*.py")):
        module = importlib.import_module(f"pulse.cli.{path.stem}")
        defined |= {command.name: path.stem for command in getattr(module, "COMMANDS", [])}
    assert defined == COMMANDS


def test_migrate_creates_the_database_and_is_safe_to_repeat(fresh_database):
    first = pulse("migrate", PULSE_DATABASE_URL=fresh_database)
    assert (first.returncode, first.stdout) == (0, MIGRATIONS), first.stderr
    again = pulse("migrate", PULSE_DATABASE_URL=fresh_database)
    assert (again.returncode, again.stdout) == (0, "database is up to date\n")


def test_two_migrations_at_once_apply_each_migration_once(fresh_database):
    command = [sys.executable, "-m", "pulse.cli", "migrate"]
    env = {**ENV, "PATH": "/usr/bin:/bin", "PULSE_DATABASE_URL": fresh_database}
    runs = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = sorted(run.communicate(timeout=120)[0] for run in runs)
    assert [run.returncode for run in runs] == [0, 0]
    assert outputs == [MIGRATIONS, "database is up to date\n"]


def test_health_names_what_is_wrong(database, rabbit):
    result = pulse("health", "--json")
    report = json.loads(result.stdout)
    assert result.returncode == 1
    assert [(c["name"], c["ok"]) for c in report["checks"]] == [
        ("broker", True),
        ("database", True),
        ("scheduler", False),
        ("workers", True),
    ]
    assert "no scheduler heartbeat yet" in report["checks"][2]["detail"]
    assert report["checks"][3]["detail"] == "no worker runs here"

    down = pulse("health", PULSE_BROKER_URL="amqp://guest:secret@127.0.0.1:1/x")
    assert down.returncode == 1
    assert down.stdout.startswith("broker     FAIL ")
    assert "secret" not in down.stdout + down.stderr


def test_health_passes_once_the_heartbeat_tick_ran_on_a_worker(database, rabbit):
    from schedules.heartbeat import heartbeat_tick

    worker = WorkerProcess("--queues", "cleanup").wait_ready()
    try:
        heartbeat_tick.send()
        wait_for(lambda: Heartbeat.get_or_none(Heartbeat.name == SCHEDULER), "the heartbeat row")
    finally:
        worker.stop()
    result = pulse("health")
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[2].startswith("scheduler  ok   last heartbeat")


def test_the_scheduler_starts_and_registers_the_heartbeat(settings):
    scheduler = subprocess.Popen(
        [sys.executable, "-c", "from periodiq import entrypoint; entrypoint()", "pulse.actors"],
        cwd=ROOT,
        env={**ENV, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        assert scheduler.stdout
        for line in scheduler.stdout:
            lines.append(line)
            if "schedules.heartbeat:heartbeat_tick@cleanup" in line:
                break
        assert scheduler.poll() is None, "".join(lines)
        assert all(json.loads(line)["level"] for line in lines[1:]), "JSON log lines"
    finally:
        scheduler.terminate()
        scheduler.wait(30)


def test_queues_lists_every_queue(database, rabbit, tmp_path):
    result = pulse("queues", "--json", PULSE_METRICS_DIR=str(tmp_path))  # no worker ran here
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    rows = {row["queue"]: row for row in listed["queues"]}
    assert list(rows) == ["uptime", "metrics", "notifications", "oncall", "cleanup", "calculated-metrics"]
    assert set(rows["uptime"]) == {
        "queue",
        "type",
        "ready",
        "unacked",
        "completed",
        "failed",
        "delayed",
        "dead",
        "consumers",
        "paused",
    }
    assert {(row["completed"], row["failed"], row["paused"]) for row in rows.values()} == {(None, None, False)}
    assert listed["note"] == "no worker runs on this host: completed and failed counts unknown"


def processed() -> dict[str, tuple[int, int]]:
    """`pulse queues --json`: (completed, failed) by queue."""
    result = pulse("queues", "--json")
    assert result.returncode == 0, result.stderr
    return {row["queue"]: (row["completed"], row["failed"]) for row in json.loads(result.stdout)["queues"]}


def test_queues_counts_what_the_workers_running_here_completed_and_failed(workers):
    notifying = workers("--queues", "notifications")
    workers("--queues", "cleanup", processes=2)
    for i in range(3):
        actors.noop.send(f"c{i}")
    actors.always_permanent.send("p")
    for i in range(2):
        actors.broker.enqueue(actors.noop.message(f"n{i}").copy(queue_name="notifications"))

    # Summed over the two runs (and the processes of each), each queue on its own.
    idle = dict.fromkeys(["uptime", "metrics", "oncall", "calculated-metrics"], (0, 0))
    both = {**idle, "notifications": (2, 0), "cleanup": (3, 1)}
    wait_for(lambda: processed() == both, f"counts {both}", every=0.5)
    table = pulse("queues")
    header, *lines = table.stdout.splitlines()
    rows = {cells[0]: dict(zip(header.split(), cells, strict=True)) for cells in map(str.split, lines)}
    assert (rows["cleanup"]["completed"], rows["cleanup"]["failed"], rows["cleanup"]["dead"]) == ("3", "1", "1")

    # Counted since each run started: a run that ended counts no more.
    notifying.stop()
    assert processed() == {**both, "notifications": (0, 0)}


def test_dlq_errors_are_one_line(database):
    missing = pulse("dlq", "show", "12345")
    assert (missing.returncode, missing.stderr) == (1, "pulse: no dead message '12345' (see `pulse dlq list`)\n")
    usage = pulse("dlq", "requeue")
    assert (usage.returncode, usage.stderr) == (2, "pulse: name the messages to requeue, or give --all\n")


@pytest.mark.parametrize(
    "args",
    [
        ("oncall", "alerts", "--limit", "-1"),
        ("oncall", "alerts", "--limit", "99999999999999999999"),
        ("notifications", "--limit", "99999999999999999999"),
        ("dlq", "list", "--limit", "0"),
    ],
)
def test_a_limit_out_of_range_is_a_usage_error(database, args):
    refused = pulse(*args)
    assert refused.returncode == 2
    assert "Error: Invalid value for '--limit'" in refused.stderr and "Traceback" not in refused.stderr


def test_an_unreachable_database_is_one_line_without_its_password(settings):
    result = pulse("dlq", "list", PULSE_DATABASE_URL="postgresql://pulse:s3cret@127.0.0.1:1/pulse")
    assert result.returncode == 1
    assert result.stderr.startswith("pulse: database unavailable at postgresql://pulse:***@127.0.0.1:1/pulse: ")
    assert "s3cret" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "supervisor"])
def test_run_starts_workers_and_scheduler_and_a_signal_stops_both(stop, database, rabbit):
    command = [sys.executable, "-m", "pulse.cli", "run", "--threads", "1"]  # the loops take none of them
    env = {**ENV, "PATH": "/usr/bin:/bin", "PULSE_METRICS_PORT": str(free_port())}
    run = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    started = threading.Event()

    def read():
        assert run.stdout
        for line in run.stdout:
            lines.append(line)
            text = "".join(lines)
            if "schedules.heartbeat:heartbeat_tick@cleanup" in text and all(
                f"{name} loop: running in this process." in text for name in LOOPS
            ):
                started.set()
        started.set()

    threading.Thread(target=read, daemon=True).start()
    assert started.wait(60) and run.poll() is None, "".join(lines)
    run.send_signal(stop)  # to the main process only, as a supervisor or `kill` does
    assert run.wait(60) == 0, "".join(lines)
    output = "".join(lines)
    assert "Worker has been shut down." in output
    assert "Killing" not in output  # one signal each: a graceful stop
    assert "Traceback" not in output and '"level": "error"' not in output, output
