"""The runs of ``dramatiq`` on this host, each with its directory under ``PULSE_METRICS_DIR``, and
the messages their workers completed and failed, read from those directories.

Every worker process of a run writes its Prometheus samples into the run's directory (see
`pulse.telemetry.middleware`). The directory is named after the run's main process and its start
time, so a restarted ``dramatiq`` starts from zero, and a directory whose process is gone (or
whose pid now belongs to another process) is a stale one. A live run is one whose main process
this process can see: on the same host, in the same PID namespace (in Docker, the same container).
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import shutil

#: The counters `pulse.telemetry.middleware` keeps, by queue: messages that succeeded, failed attempts.
COMPLETED = "worker_task_success_total"
FAILED = "worker_task_failure_total"


def run_directory(base: str) -> str:
    """The multiprocess directory of the current dramatiq run (workers and forks share a parent)."""
    parent = os.getppid()
    return os.path.join(base, f"{parent}-{_start_time(parent)}")


def _start_time(pid: int) -> str:
    # Tells a live process from an older one with the same pid (pid 1 in every container).
    return _stat(pid, 19) or "0"


def _parent(pid: int) -> str:
    """The pid of ``pid``'s parent, as text ("" when no such process)."""
    return _stat(pid, 1)


def _stat(pid: int, field: int) -> str:
    """A field of ``/proc/PID/stat`` after the command's name (0: the state), or ""."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[field]
    except (OSError, IndexError):
        return ""


def _is_live(name: str) -> bool:
    pid, _, started = name.partition("-")
    return pid.isdigit() and _start_time(int(pid)) == started


def remove_stale_directories(base: str) -> None:
    for name in os.listdir(base):
        pid, _, _ = name.partition("-")
        if pid.isdigit() and not _is_live(name):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)


def remove_dead_processes(directory: str) -> None:
    """Remove the files of the run's worker processes that are gone: a run whose worker processes
    are restarted in place (`pulse.middleware.recycling`: same main process, same directory) starts
    from clean files too, rather than adding two files per process and restart to every scrape.
    Called in a worker process: a process of the run is a child of this one's parent, so a pid
    that another process took meanwhile (pids wrap around, soon on a busy host) is no longer one."""
    main = str(os.getppid())
    for name in os.listdir(directory):
        pid = name.removesuffix(".db").rpartition("_")[2]
        if name.endswith(".db") and pid.isdigit() and _parent(int(pid)) != main:
            with contextlib.suppress(FileNotFoundError):  # removed by a sibling booting beside it
                os.unlink(os.path.join(directory, name))


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def live_directories(base: str) -> list[str]:
    """The directories of the runs under ``base`` whose main process is alive (none if ``base`` is missing)."""
    try:
        names = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    return [os.path.join(base, name) for name in names if _is_live(name)]


@dataclasses.dataclass(frozen=True)
class Processed:
    """What the workers of the live runs did with the messages of one queue since each run started."""

    completed: int  # messages that succeeded
    failed: int  # failed attempts (each retry that fails counts again)


def processed(base: str) -> dict[str, Processed] | None:
    """Per queue, the messages completed and the attempts failed, summed over the worker processes
    of every live run under ``base`` (a queue they never took a message of has none); None when no
    run is live here."""
    from prometheus_client.multiprocess import MultiProcessCollector

    directories = live_directories(base)
    if not directories:
        return None
    files = [path for directory in directories for path in sorted(glob.glob(os.path.join(directory, "*.db")))]
    counts: dict[str, dict[str, float]] = {}
    for family in MultiProcessCollector.merge(files, accumulate=True):
        for sample in family.samples:
            name = sample.labels.get("queue_name")  # none in files from before it was added
            if sample.name in (COMPLETED, FAILED) and name:
                queue = counts.setdefault(name, {COMPLETED: 0, FAILED: 0})
                queue[sample.name] += sample.value
    return {name: Processed(completed=int(c[COMPLETED]), failed=int(c[FAILED])) for name, c in counts.items()}
