"""Fixtures of the middleware tests."""

import io
import json
import logging

import pytest

from pulse import logging as pulse_logging


@pytest.fixture
def json_logs():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(pulse_logging.Formatter())
    handler.addFilter(pulse_logging.ContextFilter())
    logging.getLogger().addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logging.getLogger().removeHandler(handler)
