"""A real Prometheus server (Debian's `prometheus`) scraping a small exporter whose values the test
sets: what the metrics worker polls in the tests and the benchmark. And `PrometheusApi`, a fake
of its query API behind Basic authentication, for the replies a real server never gives."""

from __future__ import annotations

import base64
import math
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs

import requests

from tests.support.jsonapi import JsonApi
from tests.support.target import HTTPTarget
from tests.support.wait import wait_for
from tests.support.worker import free_port

SCRAPE_S = 1  # seconds between scrapes: a value the test sets is seen within about two


class Prometheus:
    """``with Prometheus() as prometheus: prometheus.set("pulse_test_latency_ms", a=120, b=80)``.

    Starts an exporter (a local HTTP target serving /metrics) and a Prometheus scraping it every
    `SCRAPE_S`, with its storage in a temporary directory; `set` changes what the exporter serves
    and waits until Prometheus has scraped it.
    """

    def __init__(self) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            raise RuntimeError("prometheus not found: install the Debian package prometheus")
        self.exporter = HTTPTarget().__enter__()
        self.exporter.answer("/metrics", body=b"", headers={"Content-Type": "text/plain; version=0.0.4"})
        self.directory = Path(tempfile.mkdtemp(prefix="pulse-prometheus-"))
        config = self.directory / "prometheus.yml"
        config.write_text(
            f"global: {{scrape_interval: {SCRAPE_S}s, evaluation_interval: {SCRAPE_S}s}}\n"
            "scrape_configs:\n"
            f"  - {{job_name: exporter, static_configs: [{{targets: ['127.0.0.1:{self.exporter.port}']}}]}}\n"
        )
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={self.directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: self.value('up{job="exporter"}') == [1.0], "Prometheus to scrape the exporter", timeout=60)

    def value(self, query: str) -> list[float] | None:
        """The values of an instant query, or None while Prometheus does not answer."""
        try:
            answer = requests.get(f"{self.url}/api/v1/query", params={"query": query}, timeout=5).json()
        except (requests.RequestException, ValueError):
            return None
        return [float(series["value"][1]) for series in answer.get("data", {}).get("result", [])]

    def set(self, name: str, **series: float) -> None:
        """Serve ``name`` with one series per keyword (its ``instance`` label), and wait until
        Prometheus has it."""
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
        raise AssertionError(f"Prometheus did not scrape {name} = {series}: {self.value(name)}")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.exporter.__exit__(None, None, None)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> Prometheus:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


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
