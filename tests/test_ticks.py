"""Ticks: periodiq's sends survive a broker that is down; everyone else's see the error."""

import logging

import dramatiq
import pytest
from dramatiq.errors import ConnectionClosed

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
