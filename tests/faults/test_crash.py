"""Drill 1: a worker process SIGKILLed with hundreds of checks and deliveries in flight.

"Nothing lost" here: after a new worker starts, every check sent is recorded exactly once (one
row per component and slot) and every notification is sent; each webhook delivery id reaches
the receiver, which can drop the rare second copy of a delivery cut off between the receiver's
answer and the row's update.
"""

from actors.notifications import BATCH
from tests.support.vendors import Vendors
from tests.support.workload import Workload

COMPONENTS, SLOTS, SUBSCRIBERS, THREADS = 50, 6, 1000, 8


def test_a_killed_worker_loses_no_check_and_no_delivery(make_component, target, workers):
    with Vendors() as vendors:
        work = Workload(make_component, target, vendors, COMPONENTS, SLOTS, SUBSCRIBERS)
        first = workers(threads=THREADS)
        work.send()
        first.kill()  # SIGKILL: no goodbye, messages in flight and prefetched
        done_before = work.done()
        workers(threads=THREADS)
        work.finish()

    assert done_before[0] < work.checks and done_before[1] < SUBSCRIBERS  # the kill was mid-run
    work.assert_once(cut_off=THREADS * BATCH)  # a repeat only of a batch's deliveries cut off mid-flight
