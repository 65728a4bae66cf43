"""The AMQPS node of tests/support/tlsbroker.py, and what a remote location's user may do on it.

A location (here ``eu``) holds only the broker URL and its own credentials. It consumes its own
uptime queue, ``uptime.eu``, and publishes its results to the topic exchange ``pulse.results``
with its name as routing key. Central Pulse (``guest`` here) declares all of it first, with
Pulse's arguments: ``uptime.eu``, ``uptime.eu.DQ``, ``uptime.eu.XQ``, ``pulse.results`` and
``uptime.results`` bound to it with ``#``. The location's user then needs:

    configure ^uptime\\.eu(\\.DQ|\\.XQ)?$   dramatiq's consume() re-declares the three queues
    write     ^pulse\\.results$           its results
    read      ^uptime\\.eu(\\.DQ)?$        a worker consumes the queue and its .DQ
    topic permissions on pulse.results: write ^eu$, read ^$

RabbitMQ asks for write permission on a queue's dead-letter exchange (here the default one,
``amq.default``) only when the queue is created, not when an existing one is declared again, and
dead-lettering itself checks no permission. So the location may not create its queues (central
must declare them first) but consumes them as they are, and what it rejects reaches its ``.XQ``.
Publishing to the default exchange is refused to it whatever the routing key: that includes
dramatiq's delays and retries (published to ``uptime.eu.DQ``, then back to ``uptime.eu``).
"""

import ssl

import dramatiq
import pika
import pika.exceptions
import pytest

from pulse import rabbitmq
from pulse.config import Settings
from pulse.rabbitmq import amqp_url, arguments, dq, xq
from pulse.rabbitmq.broker import PulseBroker
from tests.support.certs import Authority
from tests.support.tlsbroker import TlsBroker
from tests.support.wait import wait_for

PASSWORD = "eu-secret"
CONFIGURE, WRITE, READ = r"^uptime\.eu(\.DQ|\.XQ)?$", r"^pulse\.results$", r"^uptime\.eu(\.DQ)?$"
TOPICS = {"pulse.results": ("^eu$", "^$")}
QUEUES = ("uptime.eu", "uptime.us", "uptime", "notifications")  # each with its .DQ and .XQ


def refused(what: str, user: str = "eu") -> str:
    """The reply text of RabbitMQ's 403 (a regular expression)."""
    return rf"ACCESS_REFUSED - access to {what} in vhost '/' refused for user '{user}'"


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """The node, with Pulse's queues and the results exchange declared by guest, and the user ``eu``."""
    with TlsBroker(tmp_path_factory.mktemp("tls")) as node:
        central = PulseBroker(queue_type="classic", url=node.url(), confirm_delivery=True, middleware=[])
        for queue in QUEUES:
            central.declare_queue(queue, ensure=True)
        central.channel.exchange_declare("pulse.results", "topic", durable=True)
        central.channel.queue_declare("uptime.results", durable=True)
        central.channel.queue_bind("uptime.results", "pulse.results", "#")
        central.close()
        node.add_user("eu", PASSWORD, configure=CONFIGURE, write=WRITE, read=READ, topics=TOPICS)
        yield node


@pytest.fixture
def central(node):
    """A channel as guest (every permission); the location's queues emptied afterwards."""
    connection = pika.BlockingConnection(pika.URLParameters(node.url()))
    channel = connection.channel()
    yield channel
    for queue in ("uptime.eu", dq("uptime.eu"), xq("uptime.eu"), "uptime.results"):
        channel.queue_purge(queue)
    connection.close()


@pytest.fixture
def eu(node):
    """A channel as ``eu``, with publisher confirms."""
    connection = pika.BlockingConnection(pika.URLParameters(node.url("eu", PASSWORD)))
    channel = connection.channel()
    channel.confirm_delivery()
    yield channel
    if connection.is_open:
        connection.close()


def ready(channel, queue: str) -> int:
    """The messages ready in ``queue``."""
    return channel.queue_declare(queue, passive=True).method.message_count


def test_amqps_verifies_the_certificate_and_host_name(node, tmp_path):
    settings = Settings.from_env({"PULSE_BROKER_URL": node.url("eu", PASSWORD)})
    with rabbitmq.channel(settings) as channel:  # Pulse's own path: amqp_url, URLParameters
        assert channel.is_open
    other = Authority(tmp_path)
    with pytest.raises(ssl.SSLCertVerificationError, match="self-signed certificate in certificate chain"):
        pika.BlockingConnection(pika.URLParameters(node.url("eu", PASSWORD, cafile=other.pem)))
    by_address = node.url("eu", PASSWORD).replace("@localhost:", "@127.0.0.1:")
    with pytest.raises(ssl.SSLCertVerificationError, match="IP address mismatch"):
        pika.BlockingConnection(pika.URLParameters(by_address))


def test_a_plain_amqps_url_trusts_ssl_cert_file(node, monkeypatch):
    """Without ``ssl_options``, pika verifies against the default CAs, which SSL_CERT_FILE replaces."""
    url = f"amqps://eu:{PASSWORD}@localhost:{node.port}/%2F"
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(ssl.SSLCertVerificationError):
        pika.BlockingConnection(pika.URLParameters(url))
    monkeypatch.setenv("SSL_CERT_FILE", str(node.authority.pem))
    pika.BlockingConnection(pika.URLParameters(url)).close()


def test_the_location_consumes_acks_and_dead_letters(node, central):
    message = dramatiq.Message(queue_name="uptime.eu", actor_name="check", args=(), kwargs={}, options={})
    for number in (1, 2):
        central.basic_publish("", "uptime.eu", message.copy(args=(number,)).encode())
    broker = PulseBroker(
        queue_type="classic", url=[amqp_url(node.url("eu", PASSWORD))], confirm_delivery=True, middleware=[]
    )
    consumer = broker.consume("uptime.eu")  # declares uptime.eu, .DQ and .XQ again
    delays = broker.consume(dq("uptime.eu"), timeout=100)  # as a worker does
    assert next(delays) is None  # subscribed, and nothing is delayed
    first = next(consumer)
    consumer.ack(first)
    second = next(consumer)  # one at a time: dramatiq's prefetch is 1 here
    consumer.nack(second)
    assert (first.args, second.args) == ((1,), (2,))
    consumer.close()
    delays.close()
    broker.close()
    wait_for(lambda: ready(central, xq("uptime.eu")) == 1, "the rejected message in uptime.eu.XQ")
    assert ready(central, "uptime.eu") == 0  # the first was acked: not back on closing


def test_the_location_publishes_its_results(central, eu):
    eu.basic_publish("pulse.results", "eu", b"result", mandatory=True)
    _, _, body = central.basic_get("uptime.results", auto_ack=True)
    assert body == b"result"


@pytest.mark.parametrize(
    ("exchange", "key", "what"),
    [
        ("pulse.results", "us", "topic 'us' in exchange 'pulse.results'"),
        ("", "uptime", "exchange 'amq.default'"),
        ("", "notifications", "exchange 'amq.default'"),
        ("", "uptime.eu.DQ", "exchange 'amq.default'"),  # a delay or a retry of its own
    ],
)
def test_the_location_may_publish_nothing_else(eu, exchange, key, what):
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match=refused(what)) as closed:
        eu.basic_publish(exchange, key, b"forged", mandatory=True)
    assert closed.value.reply_code == 403


@pytest.mark.parametrize("queue", ["uptime", "uptime.us", "uptime.results", "uptime.eu.XQ"])
def test_the_location_may_consume_nothing_else(eu, queue):
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match=refused(f"queue '{queue}'")):
        eu.basic_consume(queue, lambda *delivery: None)


def test_the_location_may_not_bind_or_make_queues(eu):
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match=refused("queue 'uptime.eu'")):
        eu.queue_bind("uptime.eu", "pulse.results", "eu")
    eu = eu.connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match=refused("queue 'eu.mine'")):
        eu.queue_declare("eu.mine")


def test_only_creating_a_queue_asks_for_its_dead_letter_exchange(node, central, eu):
    """Configure permission lets the location delete its queues, but not create them again: a
    queue with a dead-letter exchange needs write permission on it then (not on declaring it again)."""
    name = dq("uptime.eu")
    eu.queue_declare(name, durable=True, arguments=arguments(name, "classic"))  # again: fine
    eu.queue_delete(name)
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match=refused("exchange 'amq.default'")):
        eu.queue_declare(name, durable=True, arguments=arguments(name, "classic"))
    central.queue_declare(name, durable=True, arguments=arguments(name, "classic"))


def test_a_passive_declare_asks_for_no_permission(eu):
    """Whether a queue exists, and its count, are no secret from any user of the vhost."""
    assert eu.queue_declare("uptime", passive=True).method.message_count == 0


@pytest.mark.parametrize(
    ("name", "configure", "read", "queue", "what"),
    [
        ("eu-no-xq", r"^uptime\.eu(\.DQ)?$", READ, "uptime.eu", "queue 'uptime.eu.XQ'"),
        ("eu-no-dq", CONFIGURE, r"^uptime\.eu$", dq("uptime.eu"), "queue 'uptime.eu.DQ'"),
    ],
)
def test_a_worker_needs_each_permission(node, name, configure, read, queue, what):
    """With one queue less in configure or read, a worker's consumers fail."""
    node.add_user(name, PASSWORD, configure=configure, write=WRITE, read=read, topics=TOPICS)
    broker = PulseBroker(queue_type="classic", url=[amqp_url(node.url(name, PASSWORD))], middleware=[])
    with pytest.raises(dramatiq.errors.ConnectionClosed, match=refused(what, name)):
        next(broker.consume(queue, timeout=100))  # subscribing comes with the first message asked for
    broker.close()


class PassiveBroker(PulseBroker):
    """A broker whose consumers declare nothing: they only check their queues exist (a passive
    declare), so its user needs no configure permission at all, and may not delete its queues."""

    def _declare_queue(self, queue_name):
        return self.channel.queue_declare(queue_name, passive=True)

    def _declare_dq_queue(self, queue_name):
        return self.channel.queue_declare(dq(queue_name), passive=True)

    def _declare_xq_queue(self, queue_name):
        return self.channel.queue_declare(xq(queue_name), passive=True)


def test_a_consumer_that_declares_passively_needs_no_configure_permission(node, central):
    node.add_user("eu-passive", PASSWORD, configure="^$", write=WRITE, read=READ, topics=TOPICS)
    central.basic_publish("", "uptime.eu", dramatiq.Message("uptime.eu", "check", (), {}, {}).encode())
    broker = PassiveBroker(queue_type="classic", url=[amqp_url(node.url("eu-passive", PASSWORD))], middleware=[])
    consumer = broker.consume("uptime.eu")
    consumer.nack(next(consumer))
    consumer.close()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match=refused("queue 'uptime.eu'", "eu-passive")):
        broker.channel.queue_delete("uptime.eu")
    broker.close()
    wait_for(lambda: ready(central, xq("uptime.eu")) == 1, "the rejected message in uptime.eu.XQ")
