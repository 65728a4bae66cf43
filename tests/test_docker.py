"""The docker stack (docker/), checked without Docker: docker-compose and promtool validate the files
statically, and every metric the alerts and the dashboard read is one the workers really export.

Without docker-compose or promtool these tests skip, naming the Debian package to install; with
PULSE_REQUIRE_TOOLS=1 (CI) they fail instead.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from pulse.app.workers import setup_broker
from pulse.config import RENAMED, Settings
from pulse.rabbitmq import QUEUES, dq, queue_names, xq
from pulse.rabbitmq import arguments as rabbitmq_arguments
from pulse.rabbitmq.queues import every_queue
from pulse.recurring import loop
from tests.support.wait import wait_for

DOCKER = Path(__file__).resolve().parent.parent / "docker"
PROMETHEUS = DOCKER / "prometheus"
DASHBOARD = DOCKER / "grafana" / "dashboards" / "pulse.json"
DEFINITIONS = DOCKER / "rabbitmq" / "definitions.json"

#: Pulse's services (they merge the x-pulse block) and which of them run workers.
PULSE_SERVICES = {"migrate", "worker", "worker-uptime", "worker-notifications", "scheduler", "serve"}
WORKER_SERVICES = {"worker", "worker-uptime", "worker-notifications"}
#: The queues that must not wait behind other work, each with a worker service of its own, and how
#: many replicas each runs (a replica lost leaves two consuming).
ISOLATED = {"worker-uptime": "uptime", "worker-notifications": "notifications"}
ISOLATED_REPLICAS = 3
#: Settings compose.yml gives a value of its own (the service names, the port the image exposes),
#: and the one the Dockerfile sets; .env.example says so. Every other setting comes from .env.
SET_BY_COMPOSE = {"PULSE_BROKER_URL", "PULSE_DATABASE_URL", "PULSE_RABBITMQ_API_URL", "PULSE_METRICS_PORT"}
SET_BY_IMAGE = {"PULSE_METRICS_DIR"}
SPARE = 20  # PostgreSQL connections left for the scheduler, `pulse migrate` and an operator's commands
CLUSTER_NODES = {"rabbitmq-2", "rabbitmq-3"}  # the `cluster` profile
JOB = "pulse-workers"
#: Labels Prometheus adds to every series of a worker target (prometheus.yml).
TARGET_LABELS = {"job", "instance", "service"}


def tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path:
        return path
    reason = (
        f"{name} not found: install the Debian package {package} (apt-get install --no-install-recommends {package})"
    )
    if os.environ.get("PULSE_REQUIRE_TOOLS") == "1":
        pytest.fail(reason + "; PULSE_REQUIRE_TOOLS=1 requires it")
    pytest.skip(reason)


def run(*args: str | Path, cwd: Path, hint: str = "") -> str:
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=120)
    command = " ".join(map(str, args))
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout}{result.stderr}{hint}"
    return result.stdout


def promtool(*args: str | Path, cwd: Path = PROMETHEUS, hint: str = "") -> str:
    return run(tool("promtool", "prometheus"), *args, cwd=cwd, hint=hint)


# --- docker-compose -------------------------------------------------------------------------


def documented() -> set[str]:
    """The variables docker/.env.example documents (its `# --- NAME, NAME ---` headings)."""
    headings = re.findall(r"^# --- (.+?) -", (DOCKER / ".env.example").read_text(), re.M)
    return {name.strip() for heading in headings for name in heading.split(",")}


def compose_variables() -> set[str]:
    """The variables compose.yml reads (its `${NAME...}`), from .env or the shell."""
    return set(re.findall(r"\$\{(\w+)", (DOCKER / "compose.yml").read_text()))


def resolve(directory: Path, env_file: dict[str, str]) -> dict[str, Any]:
    """compose.yml as docker-compose resolves it with ``env_file`` as its .env: a developer's
    docker/.env does not count, nor do the variables of this environment compose.yml reads."""
    path = directory / "compose.env"
    path.write_text("".join(f"{name}={value}\n" for name, value in env_file.items()))
    env = {k: v for k, v in os.environ.items() if k not in compose_variables()}
    binary = tool("docker-compose", "docker-compose")
    result = subprocess.run(
        [binary, "--env-file", str(path), "-f", "compose.yml", "config"],
        cwd=DOCKER,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return yaml.safe_load(result.stdout)


@pytest.fixture(scope="module")
def compose(tmp_path_factory) -> dict[str, Any]:
    """compose.yml as docker-compose resolves it, with the defaults (an empty .env)."""
    return resolve(tmp_path_factory.mktemp("compose"), {})


def consumed(service: dict[str, Any]) -> list[str]:
    """The queues a worker service's `dramatiq ... --queues Q ...` consumes (their urgent twins come
    with them); every queue without `--queues`."""
    command = service["command"]
    if "--queues" not in command:
        return list(QUEUES)
    following = command[command.index("--queues") + 1 :]
    return list(itertools.takewhile(lambda arg: not arg.startswith("-"), following))


def test_compose_file_is_valid(compose):
    services = compose["services"]
    assert set(services) == {"rabbitmq", "postgres", "prometheus", "grafana"} | PULSE_SERVICES | CLUSTER_NODES
    assert services["scheduler"]["deploy"]["replicas"] == 1  # two schedulers send every tick twice
    for name in WORKER_SERVICES:
        assert services[name]["command"][:2] == ["dramatiq", "pulse.actors"]
        assert services[name]["environment"]["PULSE_METRICS_PORT"] == "9191"


def test_each_queue_that_must_not_wait_has_workers_of_its_own(compose):
    services = compose["services"]
    assert {name for name, service in services.items() if service.get("command", [])[:1] == ["dramatiq"]} == (
        WORKER_SERVICES
    )
    for name, queue in ISOLATED.items():
        assert consumed(services[name]) == [queue], name
        assert services[name]["deploy"]["replicas"] == ISOLATED_REPLICAS, name
    for name in WORKER_SERVICES - set(ISOLATED):  # the rest: none of the isolated queues
        assert not set(consumed(services[name])) & set(ISOLATED.values()), name


def test_the_worker_services_consume_every_queue_once(compose):
    """Every queue has its workers (every loop runs in the processes consuming its queue, every tick
    is processed by them), and no two services share one (a flood on one never delays another)."""
    import schedules  # noqa: F401 - declares the loops and the ticks

    queues = [queue for name in sorted(WORKER_SERVICES) for queue in consumed(compose["services"][name])]
    assert sorted(queues) == sorted(QUEUES)
    assert {declared.queue_name for declared in loop.LOOPS.values()} <= set(queues)
    ticks = {actor.queue_name for actor in setup_broker().actors.values() if "periodic" in actor.options}
    assert ticks and ticks <= set(queues)


def test_postgres_accepts_every_connection_the_workers_may_hold(compose):
    """Each worker process may hold a connection per thread, one per loop it runs and one for the
    loops' turns; each container a few more for a moment (`pulse health`, a scrape). PostgreSQL
    must accept them all, and the scheduler's and an operator's commands (`SPARE`)."""
    import schedules  # noqa: F401 - declares the loops

    services = compose["services"]
    needed = 0
    for name in WORKER_SERVICES:
        command, replicas = services[name]["command"], services[name]["deploy"]["replicas"]
        loops = sum(declared.queue_name in consumed(services[name]) for declared in loop.LOOPS.values())
        per_process = int(command[command.index("--threads") + 1]) + loops + (1 if loops else 0)
        needed += replicas * (int(command[command.index("--processes") + 1]) * per_process + 2)
    command = services["postgres"]["command"]
    (allowed,) = [int(arg.split("=")[1]) for arg in command if arg.startswith("max_connections=")]
    assert needed + SPARE <= allowed, (needed, allowed)


def test_env_example_documents_every_setting_pulse_reads():
    settings = {"PULSE_" + field.name.upper() for field in dataclasses.fields(Settings)}
    assert {name for name in documented() if name.startswith("PULSE_")} == settings
    text = (DOCKER / ".env.example").read_text()
    for old in RENAMED.values():  # still read: the reader is told of them
        assert f"Formerly {old}" in text, old


def test_every_documented_setting_reaches_every_pulse_service(tmp_path):
    """Set in .env, each setting (and each renamed one's former name) arrives in every Pulse
    service as it was written, but those compose.yml and the Dockerfile set themselves."""
    assert re.search(r"^ENV .*\bPULSE_METRICS_DIR=", (DOCKER / "Dockerfile").read_text(), re.M | re.S)
    names = {name for name in documented() if name.startswith("PULSE_")} | set(RENAMED.values())
    names -= SET_BY_COMPOSE | SET_BY_IMAGE
    services = resolve(tmp_path, {name: f"value-of-{name}" for name in names})["services"]
    for service in PULSE_SERVICES:
        env = services[service]["environment"]
        assert {name: env.get(name) for name in names} == {name: f"value-of-{name}" for name in names}, service


def test_every_setting_compose_passes_is_documented(compose):
    known = documented() | set(RENAMED.values())
    for name in PULSE_SERVICES:
        env = compose["services"][name]["environment"]
        assert set(env) <= known, f"{name}: {set(env) - known} not in .env.example"
        assert SET_BY_COMPOSE <= set(env), name


def test_pulse_services_use_the_pulse_vhost_and_user_on_every_node(compose):
    for name in PULSE_SERVICES:
        env = compose["services"][name]["environment"]
        settings = Settings.from_env(env)
        nodes = ["rabbitmq", *sorted(CLUSTER_NODES)]  # rabbitmq first: the others answer only in the profile
        assert settings.broker_urls == [f"amqp://pulse:change-me@{node}:5672/pulse" for node in nodes], name
        assert env["PULSE_RABBITMQ_API_URL"] == "http://pulse:change-me@rabbitmq:15672", name
        assert (settings.vhost, settings.queue_type) == ("pulse", "classic")


def test_the_cluster_profile_adds_two_nodes_that_join_the_first(compose):
    first = compose["services"]["rabbitmq"]
    assert "profiles" not in first
    conf = (DOCKER / "rabbitmq" / "cluster.conf").read_text()
    assert "cluster_formation.classic_config.nodes.1 = rabbit@rabbitmq" in conf
    assert "load_definitions = /etc/rabbitmq/definitions.json" in conf
    for name in CLUSTER_NODES:
        node = compose["services"][name]
        assert node["profiles"] == ["cluster"] and node["hostname"] == name
        assert node["image"] == first["image"]
        assert node["environment"]["RABBITMQ_ERLANG_COOKIE"] == first["environment"]["RABBITMQ_ERLANG_COOKIE"]
        targets = {target: source for source, target in map(mount, node["volumes"])}
        assert (
            Path(targets["/etc/rabbitmq/rabbitmq.conf"]).resolve() == (DOCKER / "rabbitmq" / "cluster.conf").resolve()
        )
        assert targets["/var/lib/rabbitmq"] == f"{name}-data"  # a volume of its own
        assert node["depends_on"]["rabbitmq"]["condition"] == "service_healthy"


def mount(volume: dict[str, str] | str) -> tuple[str, str]:
    """(source, target) of a service's volume, as docker-compose writes it."""
    if isinstance(volume, dict):
        return volume["source"], volume["target"]
    source, target = volume.split(":")[:2]
    return source, target


def test_every_mounted_file_exists(compose):
    mounts = {}
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source, target = mount(volume)
            if source.startswith("/"):  # a bind mount (named volumes have no slash)
                assert Path(source).exists(), f"{name}: {source}"
                mounts[Path(source).resolve()] = target
    assert mounts[(DOCKER / "rabbitmq" / "definitions.json").resolve()] == "/etc/rabbitmq/definitions.json"
    assert mounts[(DOCKER / "rabbitmq" / "rabbitmq.conf").resolve()] == "/etc/rabbitmq/rabbitmq.conf"
    assert mounts[PROMETHEUS.resolve()] == "/etc/prometheus"
    assert mounts[(DOCKER / "grafana" / "dashboards").resolve()] == "/etc/grafana/dashboards"
    assert mounts[(DOCKER / "grafana" / "provisioning").resolve()] == "/etc/grafana/provisioning"
    assert "load_definitions = /etc/rabbitmq/definitions.json" in (DOCKER / "rabbitmq" / "rabbitmq.conf").read_text()


def test_env_example_documents_every_compose_variable():
    assert compose_variables() <= documented() | set(RENAMED.values())


# --- RabbitMQ definitions ---------------------------------------------------------------------


def default_rabbitmq_password() -> str:
    defaults = set(re.findall(r"\$\{RABBITMQ_PASSWORD:-([^}]*)\}", (DOCKER / "compose.yml").read_text()))
    assert len(defaults) == 1, defaults  # one default everywhere
    return defaults.pop()


def test_the_pulse_user_has_the_documented_password_and_the_vhost():
    definitions = json.loads(DEFINITIONS.read_text())
    (user,) = definitions["users"]
    assert user["name"] == "pulse"
    assert "administrator" in user["tags"]  # the management UI
    # rabbit_password_hashing_sha256: base64(salt + sha256(salt + password)), a 4-byte salt.
    assert user["hashing_algorithm"] == "rabbit_password_hashing_sha256"
    raw = base64.b64decode(user["password_hash"])
    salt, digest = raw[:4], raw[4:]
    assert digest == hashlib.sha256(salt + default_rabbitmq_password().encode()).digest()
    assert default_rabbitmq_password() == "change-me"  # as docs/operations.md and .env.example say
    assert definitions["vhosts"] == [{"name": "pulse"}]
    assert definitions["permissions"] == [
        {"user": "pulse", "vhost": "pulse", "configure": ".*", "write": ".*", "read": ".*"}
    ]


def test_the_dead_letter_policy_caps_only_the_xqs():
    definitions = json.loads(DEFINITIONS.read_text())
    (policy,) = definitions["policies"]
    assert policy["vhost"] == "pulse"
    assert policy["apply-to"] == "queues"
    assert policy["definition"] == {"max-length": 100000, "overflow": "drop-head"}
    pattern = re.compile(policy["pattern"])  # RabbitMQ uses PCRE: the same for this pattern
    for queue in queue_names("quorum"):  # the queues, and their urgent twins
        assert pattern.search(xq(queue)), xq(queue)
        assert not pattern.search(queue), queue
        assert not pattern.search(dq(queue)), dq(queue)


def test_rabbitmq_applies_the_dead_letter_policy_to_the_queues_a_worker_declares(workers, settings):
    (policy,) = json.loads(DEFINITIONS.read_text())["policies"]
    api = f"{settings.rabbitmq_api_url.rstrip('/')}/api"
    vhost = requests.utils.quote(settings.vhost, safe="")
    body = {key: policy[key] for key in ("pattern", "definition", "priority", "apply-to")}
    requests.put(f"{api}/policies/{vhost}/{policy['name']}", json=body, timeout=10).raise_for_status()
    try:
        workers("--queues", "uptime")  # declares all six queues with their .DQ and .XQ

        def policies():
            response = requests.get(f"{api}/queues/{vhost}", params={"columns": "name,policy"}, timeout=10)
            found = {q["name"]: q.get("policy") or None for q in response.json()}
            return found if all(found.get(xq(queue)) for queue in QUEUES) else None

        applied = wait_for(policies, "the policy on every .XQ", timeout=30, every=0.5)
        for queue in QUEUES:
            assert applied[xq(queue)] == policy["name"]
            assert applied[queue] is None and applied[dq(queue)] is None, queue
    finally:
        requests.delete(f"{api}/policies/{vhost}/{policy['name']}", timeout=10).raise_for_status()


@pytest.mark.parametrize("queue_type", ["classic", "quorum"])
def test_no_policy_contradicts_the_queue_arguments_pulse_declares(queue_type):
    for policy in json.loads(DEFINITIONS.read_text())["policies"]:
        applied = [name for name in every_queue(queue_type) if re.search(policy["pattern"], name)]
        assert applied, policy["name"]
        for name in applied:
            assert not {"x-" + key for key in policy["definition"]} & set(rabbitmq_arguments(name, queue_type)), name


# --- Prometheus -------------------------------------------------------------------------------


def test_the_alert_rules_are_valid_and_pass_their_unit_tests():
    promtool("check", "rules", "alerts.yml")
    promtool("test", "rules", "alerts_test.yml")


def test_the_prometheus_config_is_valid():
    promtool("check", "config", "prometheus.yml")  # rule_files are relative to it


def test_prometheus_scrapes_every_worker_service(compose):
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == JOB]
    (dns,) = job["dns_sd_configs"]
    assert dns["type"] == "A"
    assert set(dns["names"]) == WORKER_SERVICES
    assert dns["port"] == 9191
    (serve,) = [j for j in config["scrape_configs"] if j["job_name"] == "pulse-serve"]
    assert serve["static_configs"] == [{"targets": [f"serve:{compose['services']['serve']['expose'][0]}"]}]
    services = compose["services"]
    prometheus = services["prometheus"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]
    provisioned = yaml.safe_load((DOCKER / "grafana/provisioning/datasources/prometheus.yml").read_text())
    (datasource,) = provisioned["datasources"]
    assert datasource["url"] == "http://prometheus:9090"


# --- The metrics the workers export -----------------------------------------------------------

# Runs in a fresh process (prometheus-client picks its multiprocess mode when first imported): Pulse's
# telemetry middleware, booted as in a worker, sees a message fail and one succeed; its metrics are
# then served as `pulse.exporter.serve()` does, with the queue depths read from a stand-in for RabbitMQ
# (and the gauges the domains register from the tests' database).
EXPORT = """
import os, sys
os.environ["PULSE_METRICS_DIR"] = sys.argv[1]
import dramatiq
from pulse import exporter, rabbitmq
from pulse.rabbitmq import admin
from pulse.config import get_settings
from pulse.runs import run_directory
from pulse.telemetry import counters
from pulse.telemetry.gauges import FromDatabase
from pulse.telemetry.middleware import Telemetry
from pulse.telemetry.queues import QueueDepth

settings = get_settings()
middleware = Telemetry(settings=settings, serve=exporter.serve)
middleware.after_process_boot(None)
failing = dramatiq.Message(queue_name="uptime", actor_name="check", args=(), kwargs={}, options={"retries": 1})
middleware.before_delay_message(None, failing)
middleware.before_process_message(None, failing)
middleware.after_process_message(None, failing, exception=ValueError())
middleware.after_enqueue(None, failing, 0)
middleware.after_nack(None, failing)
succeeding = dramatiq.Message(queue_name="uptime", actor_name="check", args=(), kwargs={}, options={})
middleware.before_process_message(None, succeeding)
middleware.after_process_message(None, succeeding)

counters.rows_deleted("uptime_check", 28800)

admin.ready_counts = lambda settings, names, **options: {name: 3 for name in names}
import psycopg
with psycopg.connect(settings.database_url, autocommit=True) as conn:  # a cleanup done, rollups under way
    conn.execute("INSERT INTO cleanup_run (finished_at, succeeded) VALUES (now(), true)")
    conn.execute("INSERT INTO rollup_state (kind, watermark) VALUES ('export', now()) ON CONFLICT DO NOTHING")
    conn.execute("INSERT INTO location (name, last_result_at) VALUES ('export', now()) ON CONFLICT DO NOTHING")
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

registry = CollectorRegistry()
MultiProcessCollector(registry, path=run_directory(settings.metrics_dir))
registry.register(QueueDepth(settings))
registry.register(FromDatabase(settings))
sys.stdout.write(generate_latest(registry).decode())
with psycopg.connect(settings.database_url, autocommit=True) as conn:
    conn.execute("DELETE FROM cleanup_run")
    conn.execute("DELETE FROM rollup_state WHERE kind = 'export'")
    conn.execute("DELETE FROM location WHERE name = 'export'")
"""


@pytest.fixture(scope="module")
def exported(settings, tmp_path_factory) -> list[tuple[str, str, dict[str, str], float]]:
    """(type, sample name, labels, value) of every sample a worker's /metrics serves."""
    directory = tmp_path_factory.mktemp("metrics")
    result = subprocess.run([sys.executable, "-c", EXPORT, str(directory)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [
        (family.type, sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(result.stdout)
        for sample in family.samples
    ]


@pytest.fixture(scope="module")
def labels_of(exported) -> dict[str, set[str]]:
    """Every series name a query may use, with the labels its series carry in Prometheus."""
    names: dict[str, set[str]] = {"up": set(TARGET_LABELS)}
    for _, name, labels, _ in exported:
        names.setdefault(name, set(TARGET_LABELS)).update(labels)
    return names


def test_the_workers_export_the_documented_metrics(labels_of):
    assert {name: labels - TARGET_LABELS for name, labels in labels_of.items() if name.startswith("worker_")} == {
        "worker_broker_up": set(),
        "worker_queue_depth": {"queue_name"},
        "worker_dead_letters": {"queue_name"},
        "worker_processing_seconds_bucket": {"task_name", "le"},
        "worker_processing_seconds_count": {"task_name"},
        "worker_processing_seconds_sum": {"task_name"},
        "worker_task_success_total": {"task_name", "queue_name"},
        "worker_task_failure_total": {"task_name", "queue_name", "error_type"},
        "worker_task_dlq_total": {"task_name"},
    }
    assert labels_of["dramatiq_messages_total"] - TARGET_LABELS == {"queue_name", "actor_name"}
    assert labels_of["oncall_escalations_overdue"] - TARGET_LABELS == set()
    assert labels_of["cleanup_rows_deleted_total"] - TARGET_LABELS == {"table"}
    assert labels_of["cleanup_last_success_timestamp_seconds"] - TARGET_LABELS == set()
    assert labels_of["rollup_lag_seconds"] - TARGET_LABELS == {"kind"}
    for name in ("location_silent", "location_abstaining", "location_last_result_timestamp_seconds"):
        assert labels_of[name] - TARGET_LABELS == {"location"}


# --- PromQL of the alerts and the dashboard ---------------------------------------------------

#: Grafana's variables, for queries Prometheus can parse: any value, or the example worker's.
ANY = {"$queue": ".*", "$actor": ".*"}
EXAMPLE = {"$queue": "uptime", "$actor": "check"}
INTERVALS = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}

KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
SELECTOR = re.compile(r"([a-zA-Z_:][\w:]*)?\s*\{([^}]*)\}")
MATCHER = re.compile(r'(\w+)\s*(?:=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
NAME = re.compile(r"[a-zA-Z_:][\w:]*")


def substitute(expr: str, variables: dict[str, str]) -> str:
    for variable, value in {**INTERVALS, **variables}.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"unknown Grafana variable in {expr}"
    return expr


def series_used(expr: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """The series names a PromQL expression selects, each with the labels its matchers name, and
    the labels of its by/on/... clauses. Enough for the expressions written here, not all PromQL."""
    grouping = {label.strip() for labels in GROUPING.findall(expr) for label in labels.split(",") if label.strip()}
    rest = GROUPING.sub(" ", expr)
    used = []
    for name, matchers in SELECTOR.findall(rest):
        labels = dict(MATCHER.findall(matchers))
        names = [name] if name else labels["__name__"].split("|")
        assert all(NAME.fullmatch(n) for n in names), names
        used += [(n, set(labels) - {"__name__"}) for n in names]
    rest = SELECTOR.sub(" ", rest)
    rest = re.sub(r"\[[^\]]*\]|\boffset\s+\w+|\b\d+(?:\.\d+)?(?:e\d+)?\b", " ", rest)
    for match in NAME.finditer(rest):
        if match.group() not in KEYWORDS and not re.match(r"\s*\(", rest[match.end() :]):
            used.append((match.group(), set()))
    return used, grouping


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, expr) of every query of the dashboard."""
    return [(panel["title"], target["expr"]) for panel in dashboard()["panels"] for target in panel.get("targets", [])]


def variable_queries() -> list[tuple[str, str, str]]:
    """(variable, selector, label) of every label_values() variable."""
    found = []
    for variable in dashboard()["templating"]["list"]:
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert match, f"${variable['name']}: {query}"
        found.append((variable["name"], match.group(1), match.group(2)))
    return found


def write_rules(path: Path, exprs: list[tuple[str, str]], *, alert: bool = False) -> str:
    """One rule per (where, expression): recording rules `dashboard:queryN` to have promtool parse
    them, or alerts `QueryN` firing when the expression returns anything. Returns which is which."""
    if alert:
        rules = [{"alert": f"Query{i}", "expr": f"count({expr}) > 0"} for i, (_, expr) in enumerate(exprs)]
    else:
        rules = [{"record": f"dashboard:query{i}", "expr": expr} for i, (_, expr) in enumerate(exprs)]
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    return "".join(f"\nquery {i}: {where}: {expr}" for i, (where, expr) in enumerate(exprs))


def test_the_dashboard_uses_the_provisioned_datasource():
    provisioned = yaml.safe_load((DOCKER / "grafana/provisioning/datasources/prometheus.yml").read_text())
    (datasource,) = provisioned["datasources"]
    board = dashboard()
    assert 39 <= board["schemaVersion"] < 50
    assert {v["name"] for v in board["templating"]["list"]} == {"queue", "actor"}
    uses = [p["datasource"] for p in board["panels"] if p["type"] != "row"]
    uses += [t["datasource"] for p in board["panels"] for t in p.get("targets", [])]
    uses += [v["datasource"] for v in board["templating"]["list"]]
    assert uses and all(use == {"type": "prometheus", "uid": datasource["uid"]} for use in uses)
    provider = yaml.safe_load((DOCKER / "grafana/provisioning/dashboards/pulse.yml").read_text())["providers"][0]
    assert provider["options"]["path"] == "/etc/grafana/dashboards"  # where compose mounts dashboards/


def test_every_dashboard_query_is_valid_promql(tmp_path):
    exprs = [(f"panel {title!r}", substitute(expr, ANY)) for title, expr in panel_queries()]
    exprs += [(f"${name}", substitute(selector, ANY)) for name, selector, _ in variable_queries()]
    hint = write_rules(tmp_path / "dashboard.yml", exprs)
    promtool("check", "rules", "dashboard.yml", cwd=tmp_path, hint=hint)


def test_every_metric_and_label_queried_is_exported(labels_of):
    queries = [(f"alert {rule['alert']}", rule["expr"]) for rule in alert_rules()]
    queries += [(f"panel {title!r}", substitute(expr, ANY)) for title, expr in panel_queries()]
    queries += [
        (f"${name}", substitute(f"sum by ({label}) ({selector})", ANY)) for name, selector, label in variable_queries()
    ]
    for where, expr in queries:
        used, grouping = series_used(expr)
        assert used, where
        for name, labels in used:
            assert name in labels_of, f"{where}: no worker exports {name}"
            assert labels <= labels_of[name], f"{where}: {name} has no label {labels - labels_of[name]}"
        available = set().union(*(labels_of[name] for name, _ in used))
        assert grouping <= available, f"{where}: no series to group by {grouping - available}"


def test_every_dashboard_query_returns_data_from_a_worker(tmp_path, exported):
    """The dashboard's queries, for the example queue and actor, over what a worker serves: each
    returns something (a query with a wrong name, label or value would return nothing)."""
    exprs = [(f"panel {title!r}", substitute(expr, EXAMPLE)) for title, expr in panel_queries()]
    for name, selector, label in variable_queries():
        selector = substitute(selector, EXAMPLE)
        matcher = f'{label}!=""'
        exprs.append(
            (f"${name}", f"{selector[:-1]},{matcher}}}" if selector.endswith("}") else f"{selector}{{{matcher}}}")
        )
    hint = write_rules(tmp_path / "queries.yml", exprs, alert=True)
    target = {"job": JOB, "instance": "worker-1:9191", "service": "worker"}
    series = [{"series": f"up{labels_text(target)}", "values": "1x30"}]
    for kind, name, labels, value in exported:
        growing = kind in ("counter", "histogram") and value > 0
        values = f"0+{value:g}x30" if growing else f"{value:g}x30"
        series.append({"series": f"{name}{labels_text({**labels, **target})}", "values": values})
    tests = {
        "rule_files": ["queries.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "20m", "alertname": f"Query{i}", "exp_alerts": [{"exp_labels": {}}]}
                    for i in range(len(exprs))
                ],
            }
        ],
    }
    (tmp_path / "queries_test.yml").write_text(yaml.safe_dump(tests))
    promtool("test", "rules", "queries_test.yml", cwd=tmp_path, hint=hint)


def labels_text(labels: dict[str, str]) -> str:
    return "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}"
