"""Ticks: periodiq's sends survive a broker that is down; everyone else's see the error."""

import logging

import dramatiq
import peewee
import pytest
from dramatiq.errors import ConnectionClosed

from pulse.models import Heartbeat
from schedules.heartbeat import heartbeat


@pytest.fixture
def broker_down(monkeypatch):
    def refuse(self, **options):
        raise ConnectionClosed(OSError("connection refused"))

    monkeypatch.setattr(dramatiq.Actor, "send_with_options", refuse)


def test_a_tick_periodiq_cannot_send_is_logged_and_skipped(broker_down, caplog):
    with caplog.at_level(logging.ERROR, logger="pulse.ticks"):
        assert heartbeat.send_with_options(scheduled_at="2026-12-01T00:00:00+00:00") is None
    assert "Tick heartbeat of 2026-12-01T00:00:00+00:00 not sent, RabbitMQ is unreachable (ConnectionClosed)" in (
        caplog.text
    )


def test_any_other_send_of_a_tick_raises(broker_down):
    with pytest.raises(ConnectionClosed):
        heartbeat.send()


def test_a_tick_that_meets_a_database_outage_is_skipped_with_one_warning(monkeypatch, caplog):
    def unavailable():
        raise peewee.OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused\nIs it")

    monkeypatch.setattr(Heartbeat, "beat", staticmethod(lambda name: unavailable()))
    with caplog.at_level(logging.WARNING, logger="pulse.ticks"):
        assert heartbeat() is None  # not raised: nothing to retry, nothing to dead-letter
    assert [r.getMessage() for r in caplog.records] == [
        "Tick heartbeat skipped: the database is unavailable (connection to server at 127.0.0.1, port 5432 failed: "
        "Connection refused); the next tick tries again."
    ]
