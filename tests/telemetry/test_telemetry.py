"""Telemetry: queue depths scraped from RabbitMQ, and the metric directories of past runs removed."""

import os
import subprocess

import pika

from pulse import rabbitmq
from pulse.runs import remove_dead_processes, remove_stale_directories, run_directory
from pulse.telemetry.queues import QueueDepth


def test_a_scrape_with_rabbitmq_unreachable_answers_broker_down_after_one_attempt(settings, monkeypatch):
    connecting = []

    def refuse(parameters):  # one per node, pika taking the last one's attempts
        connecting.append(parameters[-1].connection_attempts)
        raise pika.exceptions.AMQPConnectionError("refused")

    monkeypatch.setattr(pika, "BlockingConnection", refuse)
    families = {family.name: family for family in QueueDepth(settings).collect()}
    assert set(families) == {"worker_broker_up"}  # no depth at all rather than a false 0
    assert [sample.value for sample in families["worker_broker_up"].samples] == [0]
    assert connecting == [1]


def test_a_scrape_reads_each_queue_and_dead_letter_queue(settings, rabbit):
    families = {family.name: family for family in QueueDepth(settings).collect()}
    assert [sample.value for sample in families["worker_broker_up"].samples] == [1]
    assert {s.labels["queue_name"] for s in families["worker_queue_depth"].samples} == set(rabbitmq.QUEUES)
    assert {s.labels["queue_name"] for s in families["worker_dead_letters"].samples} == set(rabbitmq.QUEUES)


def test_only_the_directories_of_live_runs_are_kept(tmp_path):
    live = run_directory(str(tmp_path))  # this process's parent: alive
    reused_pid = tmp_path / f"{os.getppid()}-1"  # same pid, another start time: an older run
    gone = tmp_path / "999999999-5"
    for directory in (live, reused_pid, gone):
        os.makedirs(directory)
        (tmp_path / directory / "counter_1.db").write_bytes(b"")

    remove_stale_directories(str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == [os.path.basename(live)]


def test_a_run_restarted_in_place_keeps_only_the_files_of_live_processes(tmp_path):
    finished = subprocess.Popen(["true"])
    finished.wait()  # reaped: its pid names no process
    gone = finished.pid
    # pid 1 is alive but no child of this process's parent: as a pid of the run that another process
    # took after it ended (pids wrap around; a busy host reuses them within seconds).
    names = [f"counter_{os.getpid()}.db", f"histogram_{gone}.db", f"counter_{gone}.db", "counter_1.db", "reload.lock"]
    for name in names:
        (tmp_path / name).write_bytes(b"")

    remove_dead_processes(str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == sorted([f"counter_{os.getpid()}.db", "reload.lock"])
