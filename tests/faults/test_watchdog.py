"""Drill 10: a message stuck in C, holding the GIL far past its time limit.

dramatiq's time limit cannot interrupt it, and no other thread of its process runs meanwhile. The
watchdog replaces the process a grace period past the limit; the messages it held go to the next
worker (here the same command, restarted, as compose's ``restart:`` or systemd would); the stuck
message comes back, is replaced again, and once its retries are spent is dead-lettered without
running again. Nothing else is lost; a message the replacement cuts off in the middle runs again,
as after any crash (Pulse's actors are idempotent, this drill's are not: it counts them).
"""

import time

from pulse.models import FailedMessage
from tests.support.actors import noop, stuck_in_c
from tests.support.models import Attempt
from tests.support.wait import wait_for

GRACE_S = 2
OTHERS = 20
ENV = {"PULSE_TIME_LIMIT_GRACE_S": str(GRACE_S)}
# dramatiq starts a worker's fork processes, the watchdog among them, once its worker processes
# say they are ready, or after --worker-fork-timeout (30 s) when one does not: as when the stuck
# message, back, takes the restarted process's GIL first. Its lines show only then too.
FORK_TIMEOUT_S = 30


def test_a_message_stuck_in_c_gets_its_process_replaced_then_is_dead_lettered(workers):
    worker = workers(threads=2, env=ENV)
    stuck = stuck_in_c.send("stuck")
    wait_for(lambda: Attempt.count("stuck") == 1, "the stuck message to start")
    started = time.monotonic()
    for i in range(OTHERS):
        noop.send(f"other-{i}")

    replaced = []
    for _ in range(2):  # its first attempt, and its one retry
        code = worker.exited(30 if not replaced else 30 + FORK_TIMEOUT_S)
        replaced.append(time.monotonic() - started)
        assert code != 0 and "past its time limit" in worker.output, worker.output
        # The supervisor starts it again; not waited for: the stuck message, back, may take its
        # process's GIL before the process says it is ready, and the watchdog replaces it as before.
        worker = workers(threads=2, env=ENV, wait=False)

    dead = wait_for(lambda: FailedMessage.get_or_none(FailedMessage.message_id == stuck.message_id), "the dead letter")
    wait_for(lambda: all(Attempt.count(f"other-{i}") for i in range(OTHERS)), "the other messages")
    done = time.monotonic() - started

    assert (dead.error_type, dead.attempts) == ("RunawayError", 2)
    assert "ran past its time limit and 2 s of grace 2 time(s)" in dead.error_message
    assert Attempt.count("stuck") == 2  # never a third time
    runs = [Attempt.count(f"other-{i}") for i in range(OTHERS)]
    assert min(runs) == 1 and sum(runs) - OTHERS <= 2, runs  # none lost; at most one cut off per replacement
    # The first replacement comes the grace period after the 1 s time limit, give or take a scan.
    assert 1 + GRACE_S <= replaced[0] <= 1 + GRACE_S + 5, replaced
    print(f"replaced after {replaced[0]:.1f} s and {replaced[1]:.1f} s; everything else done after {done:.1f} s")
