"""Fixtures of the fault drills."""

import pytest

from tests.support.restarts import rabbitmqctl


@pytest.fixture
def rabbitmq_started_at_the_end():
    """Whatever happened in the drill, the machine's RabbitMQ runs after it."""
    yield
    rabbitmqctl("start_app")
