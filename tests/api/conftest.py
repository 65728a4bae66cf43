"""What the API's test modules share: the real service on loopback, over the organization each
module declares as its ``acme`` fixture."""

import pytest

from tests.support.serve import running


@pytest.fixture
def service(settings, acme):
    with running(settings) as running_service:
        yield running_service
