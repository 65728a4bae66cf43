"""Test fixtures: the real PostgreSQL and RabbitMQ, a database and vhost per tox environment."""

import dataclasses
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from tests.support.env import ENV, NAMESPACE

os.environ.update(ENV)  # before Pulse reads its settings

import dramatiq
import psycopg
import pytest
import requests
from cryptography import x509
from psycopg import sql
from py_vapid import Vapid

from pulse.app.workers import build_broker
from pulse.config import Settings, get_settings
from pulse.db import db, migrate, setup_database
from pulse.models import Component, ExtractedValue, Organization
from pulse.net import keepalive
from pulse.rabbitmq import admin
from tests.support.models import Attempt
from tests.support.stub import Enqueued
from tests.support.target import HTTPTarget
from tests.support.vendors import Vendors
from tests.support.worker import SchedulerProcess, WorkerProcess

CERT_DAYS = 30  # how long the certificates of the test CA are valid
HEALTHY = json.dumps({"status": "UP", "db": {"latency_ms": 12.5}}).encode()

POOL = 10  # connections the test process may hold at once (tests run a few threads)

BLOATED_BYTES = 1024 * 1024  # a table grown past this (dead rows included) is truncated, not emptied

# The tables (partitioned ones as a whole, the migrations' own left alone), whether one has grown
# past BLOATED_BYTES, and the sequences that have handed out a value.
TABLES_AND_SEQUENCES = """
SELECT
  (SELECT array_agg(oid::regclass::text) FROM pg_class
    WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition
      AND relname <> 'schema_migration'),
  (SELECT coalesce(bool_or(pg_relation_size(oid) > %s), false) FROM pg_class
    WHERE relnamespace = 'public'::regnamespace AND relkind = 'r'),
  (SELECT array_agg(format('%%I.%%I', schemaname, sequencename)) FROM pg_sequences
    WHERE schemaname = 'public' AND last_value IS NOT NULL)
"""


@pytest.fixture(autouse=True)
def no_kept_connections():
    """Each test starts with no connection kept alive by the test process's thread, so a test's
    server never answers another's, and connection counts start at zero."""
    keepalive.close_all()
    yield
    keepalive.close_all()


def reset_vhost(settings: Settings) -> None:
    try:
        admin.recreate_vhost(settings)
    except requests.ConnectionError:
        pytest.exit(
            "RabbitMQ's management API does not answer on port 15672: "
            "run `rabbitmq-plugins enable rabbitmq_management`",
            returncode=3,
        )


def reset_database(settings: Settings) -> None:
    admin = psycopg.conninfo.make_conninfo(settings.database_url, dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(NAMESPACE)))


@pytest.fixture(scope="session")
def settings() -> Settings:
    current = get_settings()
    reset_vhost(current)
    reset_database(current)
    setup_database(current, max_connections=POOL)
    migrate(current)
    Attempt.create_table()
    return current


def empty_tables() -> None:
    """Every table empty and every sequence back at 1. A few rows each, as most tests leave, are
    deleted (about 15 ms; a TRUNCATE of them all makes new files for each table, index and partition:
    170 ms, and most of PostgreSQL's CPU in a test run); a table grown past BLOATED_BYTES, dead
    rows included (autovacuum may be off), has them all truncated instead."""
    tables, bloated, sequences = db.execute_sql(TABLES_AND_SEQUENCES, (BLOATED_BYTES,)).fetchone()
    with db.atomic():
        if bloated:
            db.execute_sql(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
            return
        db.execute_sql("SET LOCAL session_replication_role = replica")  # no foreign-key checks: any order
        db.execute_sql("; ".join(f"DELETE FROM {table}" for table in tables))
        for sequence in sequences or ():
            db.execute_sql("SELECT setval(%s, 1, false)", (sequence,))


@pytest.fixture
def database(settings):
    """A database with every table empty."""
    empty_tables()
    yield db
    db.close()


@pytest.fixture
def rabbit(settings):
    """RabbitMQ with every queue of the test vhost empty."""
    for name in admin.management_queues(settings):
        admin.purge(settings, name)
    return settings


@pytest.fixture
def stub_broker(settings, database):
    """A StubBroker with all of Pulse's middleware."""
    broker = build_broker(dataclasses.replace(settings, broker_url="stub://"))
    yield broker
    broker.close()


@pytest.fixture
def broker(stub_broker):
    """The StubBroker as the process's broker (what actors send to), remembering what is enqueued
    (``broker.enqueued``: (message, delay) pairs)."""
    enqueued = Enqueued()
    stub_broker.add_middleware(enqueued)
    stub_broker.enqueued = enqueued.messages
    previous = dramatiq.get_broker()
    dramatiq.set_broker(stub_broker)
    yield stub_broker
    dramatiq.set_broker(previous)


@pytest.fixture
def stub_worker(stub_broker):
    worker = dramatiq.Worker(stub_broker, worker_timeout=50, worker_threads=2)
    worker.start()  # sizes the pool to its 2 threads
    yield worker
    worker.stop()
    setup_database(get_settings(), max_connections=POOL)


@pytest.fixture
def workers(database, rabbit):
    started = []

    def start(*args, wait=True, **kwargs):
        """A worker, once its processes say they are ready (``wait``), else at once."""
        worker = WorkerProcess(*args, **kwargs)
        started.append(worker)
        return worker.wait_ready() if wait else worker

    yield start
    stop_all(started)


def stop_all(processes: list[WorkerProcess]) -> None:
    """Stop them side by side (each takes seconds: dramatiq's loops wake once a second)."""
    for process in processes:
        process.terminate()
    for process in processes:
        process.stop()


@pytest.fixture
def schedulers(database, rabbit):
    """Start `periodiq pulse.actors` processes: schedulers(env=None, modules=()); stopped at the end."""
    started = []

    def start(env=None, modules=()):
        scheduler = SchedulerProcess(env=env, modules=modules)
        started.append(scheduler)
        return scheduler.wait_ready()

    yield start
    stop_all(started)


@pytest.fixture
def target():
    with HTTPTarget() as serving:
        serving.answer("/health", body=HEALTHY, headers={"Content-Type": "application/json"})
        yield serving


@pytest.fixture
def make_component(database, rabbit):
    """Components of organization acme checking a target: make_component(target, **fields)."""
    organization = Organization.create(slug="acme", name="Acme")

    def component(target, **fields):
        values = {
            "organization": organization,
            "key": "api",
            "name": "Public API",
            "url": target.url("/health"),
            "interval_seconds": 30,
            "timeout_ms": 2000,
            "conditions": ["[STATUS] == 200", "[BODY].status == UP"],
            **fields,
        }
        created = Component.create(**values)
        for name, path in (values.get("extract") or {}).items():
            ExtractedValue.create(component=created, name=name, path=path)
        return created

    return component


@pytest.fixture
def vendors():
    """Local fakes of every notification vendor (`tests.support.vendors`)."""
    with Vendors() as serving:
        yield serving


@pytest.fixture
def vapid():
    """A VAPID private key (PEM) to sign Web Push messages with."""
    key = Vapid()
    key.generate_keys()
    return key.private_pem().decode()


@pytest.fixture
def config(settings, vendors, vapid):
    """Settings pointing every provider at the fakes."""
    return dataclasses.replace(
        settings,
        public_url="https://status.acme.example/",
        email_from="Acme Status <status@acme.example>",
        resend_api_key=vendors.resend_key,
        resend_url=vendors.resend_url(),
        twilio_account_sid=vendors.twilio_sid,
        twilio_auth_token=vendors.twilio_token,
        twilio_from=vendors.twilio_from,
        twilio_url=vendors.twilio_url(),
        vapid_private_key=vapid,
        vapid_subject="mailto:ops@acme.example",
    )


@pytest.fixture
def provider_env(vendors, vapid):
    """The environment that points worker processes' providers at the fakes."""
    return {
        "PULSE_EMAIL_FROM": "Acme Status <status@acme.example>",
        "PULSE_RESEND_API_KEY": vendors.resend_key,
        "PULSE_RESEND_URL": vendors.resend_url(),
        "PULSE_TWILIO_ACCOUNT_SID": vendors.twilio_sid,
        "PULSE_TWILIO_AUTH_TOKEN": vendors.twilio_token,
        "PULSE_TWILIO_FROM": vendors.twilio_from,
        "PULSE_TWILIO_URL": vendors.twilio_url(),
        "PULSE_VAPID_PRIVATE_KEY": vapid,
        "PULSE_VAPID_SUBJECT": "mailto:ops@acme.example",
    }


def expires_in_ms(certificate: Path) -> float:
    """Milliseconds from now until the PEM ``certificate`` expires (the fixture's certificates are
    made once a session: minutes before a test that reads their expiry)."""
    not_after = x509.load_pem_x509_certificate(certificate.read_bytes()).not_valid_after_utc
    return (not_after - datetime.now(UTC)).total_seconds() * 1000


@pytest.fixture(scope="session")
def certificates(tmp_path_factory):
    """A test CA and a server certificate for 127.0.0.1 and localhost that it signed, valid CERT_DAYS."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed")
    path = tmp_path_factory.mktemp("tls")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=path, check=True, capture_output=True)

    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes")
    days = ("-days", str(CERT_DAYS))
    run("req", "-x509", *ec, *days, "-keyout", "ca.key", "-out", "ca.pem", "-subj", "/CN=Pulse test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (path / "server.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\n"
        "subjectKeyIdentifier=hash\n"
    )
    run("x509", "-req", *days, "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-extfile", "server.ext", "-out", "server.pem")  # fmt: skip
    return path
