"""Which loops a worker process runs (`pulse.middleware.loops`): those of the queues it consumes."""

from tests.support.wait import wait_for


def test_a_worker_runs_the_loops_of_the_queues_it_consumes_and_says_so(workers):
    uptime = workers("--queues", "uptime", threads=1)
    cleanup = workers("--queues", "cleanup", threads=1)

    wait_for(lambda: "uptime loop: running in this process." in uptime.output, "the uptime loop")
    assert "This process runs, at their turn, the loops: uptime, heartbeat-monitors, verdicts." in uptime.output
    said = "This process runs no loop: it consumes none of their queues ("
    assert said + "calculated-metrics, metrics, notifications, oncall, uptime)." in cleanup.output
    cleanup.stop()
    assert "loop: running" not in cleanup.output
