"""The completed line on the StubBroker: a message processed successfully ends with one INFO line
naming its job, actor, queue and duration, and the components of a batch."""

import logging
from datetime import UTC, datetime

import dramatiq

from actors.uptime import checks
from pulse.errors import TransientError
from tests.middleware import run

LOGGER = "pulse.middleware.log_context"
SLOT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC).isoformat()


def completed(json_logs):
    return [line for line in json_logs() if line["logger"] == LOGGER]


def test_a_completed_message_is_one_info_line_with_its_job_actor_queue_and_duration(
    stub_broker, stub_worker, json_logs, caplog
):
    caplog.set_level(logging.INFO, logger=LOGGER)

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup")
    def tidy(organization_id):
        pass

    message = tidy.send(7)
    run(stub_broker, stub_worker)

    [line] = completed(json_logs)
    assert line["level"] == "info"
    assert (line["jobId"], line["actor"], line["worker"]) == (message.message_id, "tidy", "cleanup")
    assert isinstance(line["durationMs"], int) and line["durationMs"] >= 0
    assert line["msg"] == f"tidy completed in {line['durationMs']} ms"
    assert line["organizationId"] == 7 and "componentIds" not in line


def test_a_failed_attempt_writes_no_completed_line(stub_broker, stub_worker, json_logs, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    attempts = []

    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", min_backoff=10, max_retries=1)
    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            raise TransientError("vendor answered 503")

    flaky.send()
    run(stub_broker, stub_worker)

    assert len(attempts) == 2
    [line] = completed(json_logs)  # the second attempt's
    assert line["actor"] == "flaky"


def test_a_batch_of_checks_names_its_components_and_each_at_debug_only(
    stub_broker, stub_worker, json_logs, caplog, make_component, target
):
    caplog.set_level(logging.INFO, logger=LOGGER)
    components = [make_component(target, key=f"c{i}") for i in range(3)]
    ids = [c.id for c in components]
    batch = dramatiq.actor(checks.fn, broker=stub_broker, actor_name="checks", queue_name="uptime")

    batch.send([[i, SLOT] for i in ids])
    run(stub_broker, stub_worker, "uptime")

    [line] = completed(json_logs)
    assert (line["actor"], line["worker"], line["componentIds"]) == ("checks", "uptime", ids)
    assert line["msg"] == f"checks completed in {line['durationMs']} ms: 3 components"

    caplog.set_level(logging.DEBUG, logger=LOGGER)
    batch.send([[i, datetime(2026, 11, 30, 12, 1, tzinfo=UTC).isoformat()] for i in ids])
    run(stub_broker, stub_worker, "uptime")

    lines = completed(json_logs)[1:]
    assert [line["level"] for line in lines] == ["info", "debug", "debug", "debug"]
    assert [line["componentId"] for line in lines[1:]] == ids
    assert all(line["msg"] == f"checks completed: component {line['componentId']}" for line in lines[1:])
