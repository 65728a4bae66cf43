"""The dead_letters middleware on the StubBroker: what finally fails is recorded in `failed_message`, logged."""

import dramatiq

from pulse.errors import PermanentError
from pulse.models import FailedMessage
from tests.middleware import run


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


def test_a_message_for_an_unknown_actor_is_dead_lettered_with_the_reason(stub_broker, stub_worker):
    message = dramatiq.Message(queue_name="cleanup", actor_name="no_such_actor", args=(1,), kwargs={}, options={})
    stub_broker.enqueue(message)
    run(stub_broker, stub_worker)

    row = FailedMessage.get(FailedMessage.message_id == message.message_id)
    assert (row.actor_name, row.error_type) == ("no_such_actor", "ActorNotFound")


def test_the_dead_letter_log_line_names_the_job(stub_broker, stub_worker, json_logs):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup")
    def refuse():
        raise PermanentError("no")

    message = refuse.send()
    run(stub_broker, stub_worker)

    [line] = [line for line in json_logs() if line["logger"] == "pulse.middleware.dead_letters"]
    assert line["level"] == "error"
    assert (line["worker"], line["jobId"]) == ("cleanup", message.message_id)
    assert line["msg"] == f"refuse() dead-lettered after 1 attempt(s): no (pulse dlq show {message.message_id})."
