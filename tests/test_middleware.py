"""Pulse's middleware on dramatiq's StubBroker and an in-process worker, against real PostgreSQL."""

import io
import json
import logging
import time

import dramatiq
import pika
import pytest
from dramatiq.middleware import MiddlewareError

from pulse import logging as pulse_logging
from pulse import rabbitmq
from pulse.db import db
from pulse.errors import PermanentError, TransientError
from pulse.middleware import metrics
from pulse.middleware.retries import MAX_BACKOFF
from pulse.middleware.time_limit import TimeLimit
from pulse.models import FailedMessage, Organization


def run(broker, worker, queue="cleanup"):
    broker.join(queue, fail_fast=False)
    worker.join()


def test_a_permanent_error_is_dead_lettered_after_one_attempt(stub_broker, stub_worker):
    calls = []

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup")
    def reject(component_id):
        calls.append(component_id)
        raise PermanentError(f"component {component_id} has no URL")

    message = reject.send(42)
    run(stub_broker, stub_worker)

    assert calls == [42]
    assert [m.message_id for m in stub_broker.dead_letters] == [message.message_id]
    row = FailedMessage.get(FailedMessage.message_id == message.message_id)
    assert (row.queue_name, row.actor_name, row.args, row.attempts) == ("cleanup", "reject", [42], 1)
    assert row.error_type == "PermanentError"
    assert row.error_message == "component 42 has no URL"
    assert 'raise PermanentError(f"component {component_id} has no URL")' in row.traceback
    assert row.requeued_at is None


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


def test_a_message_for_an_unknown_actor_is_dead_lettered_with_the_reason(stub_broker, stub_worker):
    message = dramatiq.Message(queue_name="cleanup", actor_name="no_such_actor", args=(1,), kwargs={}, options={})
    stub_broker.enqueue(message)
    run(stub_broker, stub_worker)

    row = FailedMessage.get(FailedMessage.message_id == message.message_id)
    assert (row.actor_name, row.error_type) == ("no_such_actor", "ActorNotFound")


def test_retry_backoff_is_capped_below_the_consumer_timeout(stub_broker):
    with pytest.raises(MiddlewareError, match="max_backoff"):

        @dramatiq.actor(broker=stub_broker, queue_name="cleanup", max_backoff=MAX_BACKOFF + 1)
        def patient():
            pass


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


def test_each_message_returns_its_connection_to_the_pool(stub_broker, stub_worker):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", max_retries=0)
    def query_then_fail(slug):
        Organization.create(slug=slug, name=slug)
        raise PermanentError("after a query")

    for i in range(5):
        query_then_fail.send(f"org-{i}")
    run(stub_broker, stub_worker)

    pool = db.obj
    assert pool._max_connections == stub_worker.worker_threads  # sized to the worker's threads
    assert pool._in_use == {}  # every connection is back in the pool
    assert 1 <= len(pool._connections) <= stub_worker.worker_threads
    assert Organization.select().count() == 5


@pytest.fixture
def json_logs():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(pulse_logging.Formatter())
    handler.addFilter(pulse_logging.ContextFilter())
    logging.getLogger().addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logging.getLogger().removeHandler(handler)


def test_logs_carry_the_queue_the_job_and_the_ids_it_concerns(stub_broker, stub_worker, json_logs):
    logger = logging.getLogger("pulse.test")

    @dramatiq.actor(broker=stub_broker, queue_name="uptime")
    def check(component_id, scheduled_at):
        pulse_logging.bind(organizationId=7)
        logger.warning("checking")

    message = check.send(42, "2026-11-30T00:00:00Z")
    run(stub_broker, stub_worker, "uptime")
    logger.warning("outside any message")

    inside, outside = [line for line in json_logs() if line["logger"] == "pulse.test"]
    assert inside["msg"] == "checking"
    assert inside["level"] == "WARNING"
    assert inside["time"].endswith("+00:00")
    assert (inside["worker"], inside["jobId"]) == ("uptime", message.message_id)
    assert (inside["componentId"], inside["organizationId"]) == (42, 7)
    assert "jobId" not in outside and "worker" not in outside


def test_the_dead_letter_log_line_names_the_job(stub_broker, stub_worker, json_logs):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup")
    def refuse():
        raise PermanentError("no")

    message = refuse.send()
    run(stub_broker, stub_worker)

    [line] = [line for line in json_logs() if line["logger"] == "pulse.middleware.dead_letters"]
    assert line["level"] == "ERROR"
    assert (line["worker"], line["jobId"]) == ("cleanup", message.message_id)
    assert "dead-lettered after 1 attempt(s): PermanentError" in line["msg"]


def test_a_scrape_with_rabbitmq_unreachable_answers_broker_down_after_one_attempt(settings, monkeypatch):
    connecting = []

    def refuse(parameters):
        connecting.append(parameters.connection_attempts)
        raise pika.exceptions.AMQPConnectionError("refused")

    monkeypatch.setattr(pika, "BlockingConnection", refuse)
    families = {family.name: family for family in metrics.QueueDepth(settings).collect()}
    assert set(families) == {"worker_broker_up"}  # no depth at all rather than a false 0
    assert [sample.value for sample in families["worker_broker_up"].samples] == [0]
    assert connecting == [1]


def test_a_scrape_reads_each_queue_and_dead_letter_queue(settings, rabbit):
    families = {family.name: family for family in metrics.QueueDepth(settings).collect()}
    assert [sample.value for sample in families["worker_broker_up"].samples] == [1]
    assert {s.labels["queue_name"] for s in families["worker_queue_depth"].samples} == set(rabbitmq.QUEUES)
    assert {s.labels["queue_name"] for s in families["worker_dead_letters"].samples} == set(rabbitmq.QUEUES)
