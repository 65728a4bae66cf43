"""The time_limit middleware on the StubBroker: at most 25 minutes an actor, interrupted past its own limit."""

import time

import dramatiq
import pytest
from dramatiq.middleware import MiddlewareError

from pulse.middleware.time_limit import TimeLimit
from pulse.models import FailedMessage
from tests.middleware import run


def test_no_actor_may_run_longer_than_25_minutes(stub_broker):
    with pytest.raises(MiddlewareError, match="time_limit"):

        @dramatiq.actor(broker=stub_broker, queue_name="cleanup", time_limit=30 * 60 * 1000)
        def endless():
            pass


def test_an_actor_over_its_time_limit_is_interrupted_and_dead_lettered(stub_broker, stub_worker):
    time_limit = next(m for m in stub_broker.middleware if isinstance(m, TimeLimit))
    time_limit.after_process_boot(stub_broker)  # starts the watchdog, as a dramatiq worker process does

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", time_limit=200, max_retries=0)
    def spin():
        while True:
            time.sleep(0.01)

    spin.send()
    run(stub_broker, stub_worker)

    assert FailedMessage.get().error_type == "TimeLimitExceeded"
