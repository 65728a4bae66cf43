"""A real Prometheus server (Debian's `prometheus`) scraping a small exporter whose values the test
sets: what the metrics worker polls in the tests and the benchmark. And `PrometheusApi`, a fake
of its query API behind Basic authentication, for the replies a real server never gives."""

from __future__ import annotations

import base64
import math
import secrets
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
import yaml

from tests.support.daemon import Daemon, Harness, check
from tests.support.jsonapi import JsonApi
from tests.support.target import HTTPTarget
from tests.support.worker import free_port

SCRAPE_S = 1  # seconds between scrapes: a value the test sets is seen within about two


class Prometheus(Harness):
    """``with Prometheus() as prometheus: prometheus.set("pulse_test_latency_ms", a=120, b=80)``.

    Starts an exporter (a local HTTP target serving /metrics) and a Prometheus scraping it every
    `SCRAPE_S`, with its storage in a temporary directory; `set` changes what the exporter serves
    and waits until Prometheus has scraped it.

    Parameters (both optional, for alerting: see tests/support/alertmanager.py):
      rules: alerting (or recording) rules, each as a rule file writes it (``{"alert": ...,
        "expr": ..., "for": ..., "labels": ..., "annotations": ...}``), in one group evaluated
        every `SCRAPE_S`.
      alertmanager: the URL of the Alertmanager its alerts go to.

    Its generated files are checked by ``promtool check config`` when there are rules or an
    Alertmanager. A startup that fails raises with the end of its log; so does leaving the
    ``with`` after it died on its own, and a failure in the ``with`` gets that log as a note.
    """

    name = "Prometheus"

    def __init__(self, *, rules: Sequence[Mapping[str, Any]] = (), alertmanager: str | None = None) -> None:
        self.exporter = HTTPTarget().__enter__()
        self.exporter.answer("/metrics", body=b"", headers={"Content-Type": "text/plain; version=0.0.4"})
        self.directory = Path(tempfile.mkdtemp(prefix="pulse-prometheus-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.daemon: Daemon | None = None
        try:
            config_file = self.directory / "prometheus.yml"
            config: dict[str, Any] = {
                "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
                "scrape_configs": [
                    {"job_name": "exporter", "static_configs": [{"targets": [f"127.0.0.1:{self.exporter.port}"]}]}
                ],
            }
            if rules:
                rule_file = self.directory / "rules.yml"
                group = {"name": "pulse-test", "interval": f"{SCRAPE_S}s", "rules": [dict(rule) for rule in rules]}
                rule_file.write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False))
                config["rule_files"] = [str(rule_file)]
            if alertmanager is not None:
                parts = urlsplit(alertmanager)
                target = {"scheme": parts.scheme, "static_configs": [{"targets": [parts.netloc]}]}
                if parts.path.strip("/"):
                    target["path_prefix"] = parts.path
                config["alerting"] = {"alertmanagers": [target]}
            config_file.write_text(yaml.safe_dump(config, sort_keys=False))
            if rules or alertmanager is not None:
                check("promtool", "check", "config", str(config_file))  # its rule files too
            self.daemon = daemon = Daemon(
                "prometheus",
                [
                    f"--config.file={config_file}",
                    f"--storage.tsdb.path={self.directory / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    f"--web.external-url={self.url}",  # the alerts' generatorURL, not the host's name
                ],
                self.directory / "prometheus.log",
            )
            # Its targets, scraped and notified, come from discovery, which it updates every 5 s.
            daemon.wait_ready(lambda: self.value('up{job="exporter"}') == [1.0], "Prometheus to scrape the exporter")
            if alertmanager is not None:  # an alert sent before would be dropped (re-sent a minute later)
                daemon.wait_ready(self._notifying, f"Prometheus to discover the Alertmanager at {alertmanager}")
        except BaseException:
            self.close()
            raise

    @property
    def process(self) -> subprocess.Popen[bytes]:
        """Its process (for the benchmark's CPU accounting)."""
        assert self.daemon is not None
        return self.daemon.process

    def _notifying(self) -> bool:
        """Whether it has an Alertmanager to send alerts to."""
        try:
            answer = requests.get(f"{self.url}/api/v1/alertmanagers", timeout=5).json()
        except (requests.RequestException, ValueError):
            return False
        return bool(answer.get("data", {}).get("activeAlertmanagers"))

    def value(self, query: str) -> list[float] | None:
        """The values of an instant query, or None while Prometheus does not answer."""
        try:
            answer = requests.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5).json()
        except (requests.RequestException, ValueError):
            return None
        return [float(series["value"][1]) for series in answer.get("data", {}).get("result", [])]

    def alerts(self) -> list[dict[str, Any]]:
        """Its alerts, pending and firing (``GET /api/v1/alerts``)."""
        answer = requests.get(f"{self.url}/api/v1/alerts", timeout=5)
        answer.raise_for_status()
        alerts: list[dict[str, Any]] = answer.json()["data"]["alerts"]
        return alerts

    def set(self, name: str, **series: float) -> None:
        """Serve ``name`` with one series per keyword (its ``series`` label), and wait until
        Prometheus has it. Only ``name`` is served: a metric set before is gone."""
        lines = [f'{name}{{series="{label}"}} {value!r}' for label, value in series.items()]
        self.exporter.answer(
            "/metrics", body=("\n".join(lines) + "\n").encode(), headers={"Content-Type": "text/plain; version=0.0.4"}
        )
        expected = sorted(float(v) for v in series.values())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            seen = self.value(name)
            if seen is not None and sorted(seen) == expected:
                return
            time.sleep(0.1)
        message = f"Prometheus did not scrape {name} = {series}: {self.value(name)}"
        raise AssertionError(self.daemon.report(message) if self.daemon else message)

    def close(self) -> str | None:
        """Stop it and its exporter, remove its directory; a report if it had exited on its own."""
        died = super().close()
        self.exporter.__exit__(None, None, None)
        return died


class PrometheusApi(JsonApi):
    """A local fake of Prometheus's instant query API, ``POST /api/v1/query`` with the query
    form-encoded, behind Basic authentication as Prometheus's web configuration file sets it up.

    Prometheus's documentation: "HTTP API" (https://prometheus.io/docs/prometheus/latest/querying/api/)
    and "HTTPS and authentication" (https://prometheus.io/docs/prometheus/latest/configuration/https/).

    ``results[query]`` are the values of its series (a vector); a query it does not know has none.
    Without the right ``Authorization`` it answers 401 ``Unauthorized``; without a query, 400
    ``bad_data``. Every request is kept in `requests`. Its password has characters JSON escapes.
    """

    def __init__(self) -> None:
        self.username = "pulse"
        self.password = 'Tr0ub4dor&3/"' + secrets.token_hex(6)
        self.results: dict[str, list[float]] = {}
        self.requests: list[dict[str, Any]] = []
        super().__init__()

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        self.requests.append({"path": path, "headers": headers, "body": body})
        if method != "POST" or path != "/api/v1/query":
            return 404, {"status": "error", "errorType": "not_found", "error": "not found"}, {}
        pair = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        if headers.get("authorization") != f"Basic {pair}":
            return 401, b"Unauthorized\n", {}
        text = parse_qs(body.decode()).get("query", [""])[0]
        if not text:
            return 400, {"status": "error", "errorType": "bad_data", "error": 'invalid parameter "query"'}, {}
        now = time.time()
        result = [
            {"metric": {"series": str(i)}, "value": [now, _text(value)]}
            for i, value in enumerate(self.results.get(text, []))
        ]
        return 200, {"status": "success", "data": {"resultType": "vector", "result": result}}, {}


def _text(value: float) -> str:
    """A value as Prometheus writes it: "NaN", "+Inf", "-Inf" or the number."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
