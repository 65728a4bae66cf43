import subprocess
import sys

import pytest

from pulse.config import Settings, management_url, redact, renamed_in_use
from pulse.errors import ConfigError
from tests.support.env import ENV
from tests.support.worker import ROOT


def test_defaults_need_no_environment():
    settings = Settings.from_env({})
    assert settings.broker_url == "amqp://guest:guest@127.0.0.1:5672/%2F"
    assert settings.database_url == "postgresql://postgres@127.0.0.1:5432/pulse"
    assert settings.log_level == "INFO"
    assert settings.metrics_port == 9191
    assert settings.vhost == "/"
    assert settings.database_name == "pulse"
    assert settings.rabbitmq_api_url == "http://guest:guest@127.0.0.1:15672"
    assert (settings.max_messages_per_process, settings.max_memory_per_process_mib) == (50_000, 200)


def test_it_reads_every_variable():
    settings = Settings.from_env(
        {
            "PULSE_BROKER_URL": "amqps://u:p@rabbit.example:5671/prod",
            "PULSE_DATABASE_URL": "postgres://u:p@db.example/pulse_prod",
            "PULSE_LOG_LEVEL": "debug",
            "PULSE_METRICS_PORT": "9000",
            "PULSE_MAX_RETRIES": "5",
            "PULSE_TIME_LIMIT_S": "60",
            "PULSE_MAX_MESSAGES_PER_PROCESS": "1000",
            "PULSE_MAX_MEMORY_PER_PROCESS_MIB": "0",
            "PULSE_NOTIFY_TIMEOUT_S": "2.5",
            "PULSE_ALLOW_PRIVATE_TARGETS": "false",
            "PULSE_ALLOW_LINK_LOCAL_TARGETS": "true",
            "PULSE_SERVE_PUBLIC_URL": "https://hooks.acme.example:8443/",
            "PULSE_SERVE_METRICS_HOST": "0.0.0.0",
            "PULSE_SERVE_MAX_CONNECTIONS_PER_ADDRESS": "8",
            "PULSE_SERVE_TRUSTED_PROXIES": "10.0.0.5, 10.1.0.0/16,2001:db8::/32",
        }
    )
    assert settings.vhost == "prod"
    assert settings.database_url == "postgresql://u:p@db.example/pulse_prod"
    assert settings.log_level == "DEBUG"
    assert settings.metrics_port == 9000
    assert settings.max_retries == 5
    assert settings.time_limit_s == 60
    assert (settings.max_messages_per_process, settings.max_memory_per_process_mib) == (1000, 0)
    assert settings.notify_timeout_s == 2.5
    assert (settings.allow_private_targets, settings.allow_link_local_targets) == (False, True)
    assert settings.rabbitmq_api_url == "https://u:p@rabbit.example:15672"
    assert settings.serve_public_url == "https://hooks.acme.example:8443"  # the trailing slash dropped
    assert (settings.serve_metrics_host, settings.serve_max_connections_per_address) == ("0.0.0.0", 8)
    assert settings.serve_trusted_proxies == "10.0.0.5,10.1.0.0/16,2001:db8::/32"


@pytest.mark.parametrize(
    "name, value, reason",
    [
        ("PULSE_BROKER_URL", "rabbit", "not a valid URL"),
        ("PULSE_BROKER_URL", "redis://localhost:6379", "not a valid URL"),
        ("PULSE_BROKER_URL", "amqp://guest:guest@host:notaport/", "not a valid URL"),
        ("PULSE_BROKER_URL", "amqp:///vhost", "not a valid URL"),
        ("PULSE_DATABASE_URL", "mysql://root@localhost/pulse", "not a valid URL"),
        ("PULSE_DATABASE_URL", "postgresql://postgres@localhost:5432/", "names no database"),
        ("PULSE_DATABASE_URL", "postgresql://postgres@localhost:99999/pulse", "not a valid URL"),
        ("PULSE_LOG_LEVEL", "LOUD", "unknown log level 'LOUD'"),
        ("PULSE_METRICS_PORT", "0", "between 1 and 65535"),
        ("PULSE_METRICS_PORT", "65536", "between 1 and 65535"),
        ("PULSE_METRICS_PORT", "nine", "not a whole number"),
        ("PULSE_METRICS_DIR", "relative/dir", "not an absolute path"),
        ("PULSE_MAX_RETRIES", "-1", "between 0 and 20"),
        ("PULSE_TIME_LIMIT_S", "1800", "between 1 and 1500"),
        ("PULSE_HEARTBEAT_MAX_AGE_S", "10", "between 60 and 86400"),
        ("PULSE_MAX_MESSAGES_PER_PROCESS", "-1", "between 0 and 100000000"),
        ("PULSE_MAX_MEMORY_PER_PROCESS_MIB", "200MB", "not a whole number"),
        ("PULSE_RABBITMQ_API_URL", "ftp://host", "not a valid URL"),
        ("PULSE_NOTIFY_TIMEOUT_S", "0", "between 0.1 and 120"),
        ("PULSE_NOTIFY_TIMEOUT_S", "soon", "not a number"),
        ("PULSE_ALLOW_PRIVATE_TARGETS", "maybe", "not a boolean"),
        ("PULSE_BROKER_URL", "amqp://a:5672/v,rabbit", "node 2: not a valid URL"),
        ("PULSE_BROKER_URL", "amqp://a:5672/one,amqp://b:5672/two", "every node's URL must name the same vhost"),
        ("PULSE_BROKER_URL", "stub://,amqp://b:5672/", "stub:// stands alone"),
        ("PULSE_BROKER_URL", " , ", "no URL"),
        ("PULSE_QUEUE_TYPE", "stream", "'stream' is not one of classic, quorum"),
        ("PULSE_SERVE_PUBLIC_URL", "hooks.acme.example", "not a valid URL"),
        ("PULSE_SERVE_PUBLIC_URL", "https://hooks.acme.example/pulse", "without a path, query or fragment"),
        ("PULSE_SERVE_PUBLIC_URL", "https://hooks.acme.example/?", "without a path, query or fragment"),
        ("PULSE_SERVE_PUBLIC_URL", "https://hooks.acme.example#x", "without a path, query or fragment"),
        ("PULSE_SERVE_PUBLIC_URL", "https://u:p@hooks.acme.example", "must not carry credentials"),
        ("PULSE_SERVE_MAX_CONNECTIONS_PER_ADDRESS", "0", "between 1 and 100000"),
        ("PULSE_SERVE_TRUSTED_PROXIES", "10.0.0.0/8,proxy.local", "'proxy.local' is not an IP address or network"),
        ("PULSE_SERVE_TRUSTED_PROXIES", "10.0.0.0/33", "'10.0.0.0/33' is not an IP address or network"),
    ],
)
def test_it_rejects_a_bad_value_naming_the_variable(name, value, reason):
    with pytest.raises(ConfigError) as error:
        Settings.from_env({name: value})
    assert str(error.value).startswith(f"{name}: ")
    assert reason in str(error.value)


def test_a_renamed_setting_still_works_under_its_old_name_with_a_warning():
    old = {"PULSE_CHECK_ALLOW_PRIVATE": "false", "PULSE_CHECK_ALLOW_LINK_LOCAL": "yes"}
    settings = Settings.from_env(old)
    assert (settings.allow_private_targets, settings.allow_link_local_targets) == (False, True)
    assert renamed_in_use(old) == [
        "PULSE_CHECK_ALLOW_PRIVATE is now called PULSE_ALLOW_PRIVATE_TARGETS: rename it",
        "PULSE_CHECK_ALLOW_LINK_LOCAL is now called PULSE_ALLOW_LINK_LOCAL_TARGETS: rename it",
    ]
    both = {"PULSE_CHECK_ALLOW_PRIVATE": "false", "PULSE_ALLOW_PRIVATE_TARGETS": "true"}
    assert Settings.from_env(both).allow_private_targets is True  # the new name wins
    assert renamed_in_use(both) == [
        "PULSE_CHECK_ALLOW_PRIVATE is now called PULSE_ALLOW_PRIVATE_TARGETS: it is ignored, as "
        "PULSE_ALLOW_PRIVATE_TARGETS is set"
    ]
    assert renamed_in_use({}) == []


def test_a_setting_named_before_its_unit_was_still_works_with_a_warning():
    old = {"PULSE_TIME_LIMIT": "60", "PULSE_NOTIFY_TIMEOUT": "2.5", "PULSE_DEAD_LETTER_RETENTION": "7"}
    settings = Settings.from_env(old)
    assert (settings.time_limit_s, settings.notify_timeout_s, settings.dead_letter_retention_days) == (60, 2.5, 7)
    assert renamed_in_use(old) == [
        "PULSE_TIME_LIMIT is now called PULSE_TIME_LIMIT_S: rename it",
        "PULSE_NOTIFY_TIMEOUT is now called PULSE_NOTIFY_TIMEOUT_S: rename it",
        "PULSE_DEAD_LETTER_RETENTION is now called PULSE_DEAD_LETTER_RETENTION_DAYS: rename it",
    ]
    with pytest.raises(ConfigError, match=r"^PULSE_TIME_LIMIT: "):
        Settings.from_env({"PULSE_TIME_LIMIT": "5m"})


def test_it_reports_every_bad_variable_at_once():
    with pytest.raises(ConfigError) as error:
        Settings.from_env({"PULSE_LOG_LEVEL": "LOUD", "PULSE_METRICS_PORT": "0"})
    assert "PULSE_LOG_LEVEL" in str(error.value) and "PULSE_METRICS_PORT" in str(error.value)


def test_a_bad_url_never_shows_its_password():
    with pytest.raises(ConfigError) as error:
        Settings.from_env({"PULSE_BROKER_URL": "amqp://admin:s3cret@host:bad/"})
    assert "s3cret" not in str(error.value)


def test_secrets_are_redacted_from_repr():
    settings = Settings.from_env({"PULSE_DATABASE_URL": "postgresql://pulse:s3cret@db:5432/pulse"})
    assert "s3cret" not in repr(settings)
    assert redact("amqp://u:s3cret@h:5672/v") == "amqp://u:***@h:5672/v"
    assert management_url("amqp://a%40b:p%2Fw@h/v") == "http://a%40b:p%2Fw@h:15672"


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "dramatiq", "pulse.actors", "--processes", "1", "--threads", "1"],
        [sys.executable, "-c", "from periodiq import entrypoint; entrypoint()", "pulse.actors"],
        [sys.executable, "-m", "pulse.cli", "health"],
    ],
    ids=["dramatiq", "periodiq", "pulse"],
)
def test_a_process_with_a_bad_setting_stops_with_one_line(command):
    env = {**ENV, "PATH": "/usr/bin:/bin", "PULSE_METRICS_PORT": "70000"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert "pulse: PULSE_METRICS_PORT: the port must be between 1 and 65535, not 70000" in output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-c", "import pulse.actors"],  # what dramatiq and periodiq load first
        [sys.executable, "-m", "pulse.cli", "health"],
    ],
    ids=["workers", "pulse"],
)
def test_a_process_started_with_a_renamed_setting_warns_once(command):
    env = {**ENV, "PATH": "/usr/bin:/bin", "PULSE_CHECK_ALLOW_PRIVATE": "true"}
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    output = result.stdout + result.stderr
    assert output.count("PULSE_CHECK_ALLOW_PRIVATE is now called PULSE_ALLOW_PRIVATE_TARGETS: rename it") == 1
    assert "Traceback" not in output


def test_a_cluster_is_several_broker_urls_tried_in_order():
    settings = Settings.from_env(
        {
            "PULSE_BROKER_URL": "amqp://u:p%40ss@mq1:5672/prod, amqp://u:p%40ss@mq2:5672/prod,amqp://u:p%40ss@mq3/prod",
            "PULSE_QUEUE_TYPE": "Quorum",
        }
    )
    assert settings.broker_urls == [
        "amqp://u:p%40ss@mq1:5672/prod",
        "amqp://u:p%40ss@mq2:5672/prod",
        "amqp://u:p%40ss@mq3/prod",
    ]
    assert settings.vhost == "prod"
    assert settings.queue_type == "quorum"
    assert settings.rabbitmq_api_urls == [f"http://u:p%40ss@mq{n}:15672" for n in (1, 2, 3)]
    assert redact(settings.broker_url) == "amqp://u:***@mq1:5672/prod,amqp://u:***@mq2:5672/prod,amqp://u:***@mq3/prod"
    assert "p%40ss" not in repr(settings)
