"""Drill 16: two worker hosts, one dies mid-run.

Each host is a network namespace of the test's own (`tests.support.hosts`) that reaches RabbitMQ,
PostgreSQL, the checked target and the webhook receiver over its veth pair. Both hosts' workers
consume; with hundreds of checks and deliveries under way, every process of one host is
SIGKILLed (the host dies, its connections cut).

"Nothing lost or doubled" here: the other host finishes the work; every check sent is recorded
exactly once (one row per component and slot), every notification is sent, and each delivery id
reaches the receiver; a delivery cut off between the receiver's answer and its row's update (at
most one per thread of the dead host) reaches it twice, with the same id, for the receiver to drop.
"""

from urllib.parse import urlsplit

import pytest

from actors.notifications import BATCH
from pulse.rabbitmq import admin
from tests.support.hosts import Host, HostsUnavailableError
from tests.support.vendors import Vendors
from tests.support.wait import wait_for
from tests.support.worker import WorkerProcess
from tests.support.workload import Workload

# The broadcast goes in 12 batches of 25 (`send_many`), fewer than the two hosts' threads: checks go on beside them.
COMPONENTS, SLOTS, SUBSCRIBERS, THREADS = 50, 20, 300, 8


@pytest.fixture
def hosts():
    try:
        made = [Host("a"), Host("b")]
    except HostsUnavailableError as e:
        pytest.skip(str(e))
    yield made
    for host in made:
        host.close()


@pytest.mark.minutes
def test_when_one_worker_host_dies_the_other_finishes_the_work(make_component, target, settings, hosts):
    with Vendors() as vendors:
        work = Workload(make_component, target, vendors, COMPONENTS, SLOTS, SUBSCRIBERS)
        for host in hosts:  # RabbitMQ, PostgreSQL, the target, the receiver: over the host's link
            host.loopback(port(settings.broker_url), port(settings.database_url), target.port, port(vendors.base_url))
        doomed, survivor = (WorkerProcess(threads=THREADS, host=host).wait_ready() for host in hosts)
        wait_for(lambda: consumers(settings, "uptime") == 2, "both hosts consuming", every=0.5)
        work.send()
        done_before = work.done()  # what the kill meets (after it, the survivor goes on while the kill reaps)
        hosts[0].kill()  # every process of the host, at once: the workers and its end of every connection
        work.finish()
        assert survivor.process.poll() is None and doomed.process.poll() == -9

    assert done_before[0] < work.checks and done_before[1] < SUBSCRIBERS  # the host died mid-run
    work.assert_once(cut_off=THREADS * BATCH)  # a repeat only of a batch's deliveries cut off mid-flight


def port(url):
    return urlsplit(url).port


def consumers(settings, queue):
    return admin.management_queues(settings).get(queue, {}).get("consumers")
