"""The log_context middleware on the StubBroker: each log line names its queue, its job and the ids it concerns."""

import logging

import dramatiq

from pulse import logging as pulse_logging
from tests.middleware import run


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
    assert inside["level"] == "warning"
    assert inside["time"].endswith("Z") and len(inside["time"]) == len("2026-12-04T14:00:00.123Z")
    assert (inside["worker"], inside["jobId"]) == ("uptime", message.message_id)
    assert (inside["componentId"], inside["organizationId"]) == (42, 7)
    assert "jobId" not in outside and "worker" not in outside
