"""The retries middleware on the StubBroker: errors retried with backoff, capped below the consumer timeout."""

import time

import dramatiq
import pytest
from dramatiq.middleware import MiddlewareError

from pulse.errors import TransientError
from pulse.middleware.retries import MAX_BACKOFF
from pulse.models import FailedMessage
from tests.middleware import run


def test_a_transient_error_is_retried_then_dead_lettered(stub_broker, stub_worker):
    calls = []

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", min_backoff=10)
    def flaky(key):
        calls.append(time.monotonic())
        raise TransientError("vendor answered 503")

    message = flaky.send("k")
    run(stub_broker, stub_worker)

    assert len(calls) == 1 + 3
    row = FailedMessage.get(FailedMessage.message_id == message.message_id)
    assert (row.attempts, row.error_type, row.error_message) == (4, "TransientError", "vendor answered 503")


def test_an_unexpected_exception_is_retried_like_a_transient_one(stub_broker, stub_worker):
    calls = []

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", min_backoff=10, max_retries=1)
    def buggy():
        calls.append(1)
        return {}["missing"]

    buggy.send()
    run(stub_broker, stub_worker)

    assert len(calls) == 2
    assert FailedMessage.get().error_type == "KeyError"


def test_a_success_after_a_retry_leaves_no_dead_letter(stub_broker, stub_worker):
    calls = []

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", min_backoff=10)
    def second_time_lucky():
        calls.append(1)
        if len(calls) == 1:
            raise TransientError("first attempt fails")

    second_time_lucky.send()
    run(stub_broker, stub_worker)

    assert len(calls) == 2
    assert FailedMessage.select().count() == 0
    assert stub_broker.dead_letters == []


def test_retry_backoff_is_capped_below_the_consumer_timeout(stub_broker):
    with pytest.raises(MiddlewareError, match="max_backoff"):

        @dramatiq.actor(broker=stub_broker, queue_name="cleanup", max_backoff=MAX_BACKOFF + 1)
        def patient():
            pass


def test_an_expected_failure_is_one_warning_per_attempt_and_one_error_at_the_end(stub_broker, stub_worker, json_logs):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", min_backoff=10, max_retries=2)
    def deliver(notification_id):
        raise TransientError("Webhook: connection refused by 127.0.0.1")

    message = deliver.send(11)
    run(stub_broker, stub_worker)

    lines = [(line["level"], line["msg"]) for line in json_logs() if line["level"] in ("warning", "error")]
    assert [level for level, _ in lines] == ["warning", "warning", "error"], lines
    assert lines[0][1].startswith("deliver(11) attempt 1/3: Webhook: connection refused by 127.0.0.1; retrying in ")
    assert lines[1][1].startswith("deliver(11) attempt 2/3: Webhook: connection refused by 127.0.0.1; retrying in ")
    assert lines[2][1] == (
        "deliver(11) dead-lettered after 3 attempt(s): Webhook: connection refused by 127.0.0.1 "
        f"(pulse dlq show {message.message_id})."
    )
    assert not any("exc_info" in line for line in json_logs())  # no traceback


def test_an_unexpected_failure_keeps_its_traceback(stub_broker, stub_worker, json_logs):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", max_retries=0)
    def buggy():
        return {}["missing"]

    buggy.send()
    run(stub_broker, stub_worker)

    [crash] = [line for line in json_logs() if "exc_info" in line]
    assert "KeyError: 'missing'" in crash["exc_info"] and crash["level"] == "error"
    [dead] = [line for line in json_logs() if line["logger"] == "pulse.middleware.dead_letters"]
    assert dead["msg"].startswith("buggy() dead-lettered after 1 attempt(s): KeyError: 'missing' (pulse dlq show ")
