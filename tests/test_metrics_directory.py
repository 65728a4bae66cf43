import os

from pulse.middleware.metrics import remove_stale_directories, run_directory


def test_only_the_directories_of_live_runs_are_kept(tmp_path):
    live = run_directory(str(tmp_path))  # this process's parent: alive
    reused_pid = tmp_path / f"{os.getppid()}-1"  # same pid, another start time: an older run
    gone = tmp_path / "999999999-5"
    for directory in (live, reused_pid, gone):
        os.makedirs(directory)
        (tmp_path / directory / "counter_1.db").write_bytes(b"")

    remove_stale_directories(str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == [os.path.basename(live)]
