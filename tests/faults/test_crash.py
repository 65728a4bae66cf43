"""Drill 1: a worker process SIGKILLed with hundreds of checks and deliveries in flight.

"Nothing lost" here: after a new worker starts, every check sent is recorded exactly once (one
row per component and slot) and every notification is sent; each webhook delivery id reaches
the receiver, which can drop the rare second copy of a delivery cut off between the receiver's
answer and the row's update.
"""

from pulse.models import Notification
from tests.support.vendors import Vendors
from tests.support.workload import Workload

# The broadcast goes in 6 batches of 25 (`send_many`), fewer than the threads: checks go on beside them.
COMPONENTS, SLOTS, SUBSCRIBERS, THREADS = 50, 6, 150, 8


def test_a_killed_worker_loses_no_check_and_no_delivery(make_component, target, workers):
    with Vendors() as vendors:
        work = Workload(make_component, target, vendors, COMPONENTS, SLOTS, SUBSCRIBERS)
        first = workers(threads=THREADS)
        work.send()
        first.kill()  # SIGKILL: no goodbye, messages in flight and prefetched
        done_before = work.done()
        recorded = Notification.select().where(Notification.status == "sent").count()  # the dead worker's last word
        workers(threads=THREADS)
        work.finish()

    assert done_before[0] < work.checks and done_before[1] < SUBSCRIBERS  # the kill was mid-run
    # A repeat only of a delivery the receiver had and the dead worker had not recorded (its batch
    # records webhook deliveries at its end), or of one on its way to the receiver at the kill.
    work.assert_once(cut_off=done_before[1] - recorded + THREADS)
