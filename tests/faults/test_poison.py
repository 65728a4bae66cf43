"""Drill 4: poison messages are dead-lettered with a readable reason, and the worker goes on.

"Nothing lost" here: every poison message is in its queue's `.XQ` and has a `failed_message` row
that says what is wrong with it; the good messages sent after them are all processed.
"""

import json
import time
import uuid

import pika

from actors.notifications import broadcast, send
from pulse import rabbitmq
from pulse.models import FailedMessage
from pulse.rabbitmq import admin
from tests.support import actors
from tests.support.models import Attempt
from tests.support.wait import wait_for

NOT_A_MESSAGE = "the body is JSON but not a message"


def message(actor, *args, queue="cleanup", **fields):
    """The JSON of a dramatiq message, as any client could send it."""
    return json.dumps(
        {
            "queue_name": queue,
            "actor_name": actor,
            "args": list(args),
            "kwargs": {},
            "options": {},
            "message_id": str(uuid.uuid4()),
            "message_timestamp": int(time.time() * 1000),
            **fields,
        }
    ).encode()


def publish(settings, queue, *bodies):
    with rabbitmq.channel(settings) as channel:
        for body in bodies:
            channel.basic_publish("", queue, body, pika.BasicProperties(delivery_mode=2))


def test_poison_messages_are_dead_lettered_with_the_reason_and_the_worker_goes_on(workers, settings):
    workers(threads=2)
    wrong_arity = message("noop", "a", "b", "c")
    publish(
        settings,
        "cleanup",
        b"not json at all",
        b"\xff\xfe\x00binary",
        b'{"hello": "world"}',
        b"[1, 2, 3]",
        message("no_such_actor", 1),
        wrong_arity,
        message("noop", "a NUL \u0000 inside"),  # PostgreSQL stores no NUL: the row must still be written
    )
    publish(settings, "notifications", message("send", "not-a-number", queue="notifications"))
    broadcast.send(424242)  # ids that do not exist
    send.send(424243)
    for i in range(5):
        actors.noop.send(f"after-{i}")

    rows = wait_for(lambda: (found := list(FailedMessage.select())) and len(found) == 10 and found, "10 dead letters")
    wait_for(lambda: all(Attempt.count(f"after-{i}") == 1 for i in range(5)), "the good messages after them")

    reasons = sorted((r.actor_name, r.error_type, r.error_message, r.attempts) for r in rows)
    assert reasons == sorted(
        [
            ("undecodable", "PermanentError", "the body is not JSON (Expecting value: line 1 column 1 (char 0))", 1),
            (
                "undecodable",
                "PermanentError",
                "the body is not UTF-8 ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)",
                1,
            ),
            ("undecodable", "PermanentError", f"{NOT_A_MESSAGE}: queue_name is missing or not a str", 1),
            ("undecodable", "PermanentError", "the body is JSON but not a message (a list, not an object)", 1),
            ("no_such_actor", "ActorNotFound", "no_such_actor", 1),
            ("noop", "TypeError", "noop() takes 1 positional argument but 3 were given", 1),
            ("send", "DataError", reasons_of(rows, "send", "DataError"), 1),
            ("noop", "DataError", reasons_of(rows, "noop", "DataError"), 1),
            ("broadcast", "PermanentError", "event 424242 does not exist", 1),
            ("send", "PermanentError", "notification 424243 does not exist", 1),
        ]
    )
    assert "not-a-number" in reasons_of(rows, "send", "DataError")
    assert [r.args for r in rows if r.error_type == "DataError" and r.actor_name == "noop"] == [["a NUL \ufffd inside"]]
    preview = {r.options.get("body") for r in rows if r.actor_name == "undecodable"}
    assert "not json at all" in preview
    counts = wait_for(
        lambda: (
            (c := admin.ready_counts(settings, ["cleanup.XQ", "notifications.XQ"]))
            and c == {"cleanup.XQ": 7, "notifications.XQ": 3}
            and c
        ),
        "the poison in the .XQ queues",
    )
    assert counts


def reasons_of(rows, actor, error_type):
    return next(r.error_message for r in rows if (r.actor_name, r.error_type) == (actor, error_type))
