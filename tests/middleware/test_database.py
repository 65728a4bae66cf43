"""The database middleware on the StubBroker: a pool sized to the worker's threads, each connection given back."""

import dramatiq

from pulse.db import db
from pulse.errors import PermanentError
from pulse.models import Organization
from pulse.recurring import loop
from tests.middleware import run


def test_each_message_returns_its_connection_to_the_pool(stub_broker, stub_worker):
    @dramatiq.actor(broker=stub_broker, queue_name="cleanup", max_retries=0)
    def query_then_fail(slug):
        Organization.create(slug=slug, name=slug)
        raise PermanentError("after a query")

    for i in range(5):
        query_then_fail.send(f"org-{i}")
    run(stub_broker, stub_worker)

    pool = db.obj
    assert pool._max_connections == stub_worker.worker_threads + len(loop.LOOPS) + 1  # threads, loops, beat
    assert pool._in_use == {}  # every connection is back in the pool
    assert 1 <= len(pool._connections) <= stub_worker.worker_threads
    assert Organization.select().count() == 5
