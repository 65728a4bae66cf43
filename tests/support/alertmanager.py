"""A real Alertmanager (Debian's ``prometheus-alertmanager``, 0.25 on bookworm) whose one receiver
is a webhook to the test's server, fed by a real Prometheus (tests/support/prometheus.py) whose
alerting rules fire on values the test sets.

    from tests.support.alertmanager import Alertmanager, require
    from tests.support.prometheus import Prometheus

    RULES = [{"alert": "PulseTestDown", "expr": "pulse_test_up == 0", "labels": {"severity": "page"}}]

    def test_paged(...):
        require("prometheus", "prometheus-alertmanager")  # skips, or fails in CI, without them
        with (
            Alertmanager(f"{serve.url}/alerts/alertmanager", bearer_token=token) as alertmanager,
            Prometheus(rules=RULES, alertmanager=alertmanager.url) as prometheus,
        ):
            prometheus.set("pulse_test_up", a=0)  # the rule fires: a "firing" webhook in 1-3 s
            ...
            prometheus.set("pulse_test_up", a=1)  # it resolves: a "resolved" webhook in 1-3 s

The webhook's URL and token are the test's: ``Alertmanager(webhook_url, bearer_token=...)`` sends
every notification as ``POST webhook_url`` with ``Authorization: Bearer <token>`` (no header
without a token), ``send_resolved: true``. Start the receiving server first, then Alertmanager,
then Prometheus (given Alertmanager's `url`). Prometheus scrapes and evaluates every second; an
alert's labels are the rule's, its series' (``series="a"``, ``job="exporter"``, ``instance``) and
``alertname``. `Prometheus.set` serves one metric name at a time. To await the webhooks without
sleeping, `tests.support.target.HTTPTarget` records each request and wakes `HTTPTarget.wait_for`
(tests/test_alertmanager_support.py does so).

Timings are fast: ``group_wait`` 1 s, ``group_interval`` 2 s, ``repeat_interval`` 1 h (no repeat in
a test); alerts are grouped by ``alertname``. As seen of 0.25: a rule's flip reaches the webhook
within about 1 to 3 s of `Prometheus.set` returning. A POST answered 5xx (or not answered) is
tried again with the byte-identical body, first about 0.4 s later, then with growing gaps (about
1, 1, 1, 1.5, 4 s) until the flush's 10 s deadline (``max(group_interval, 10 s)``); the next
flush starts at once and does the same. A 4xx is not retried in the flush; the next flush (one
``group_interval`` later) sends again. The body has no ``notification_reason`` or ``routeLabels``
(newer versions only). A failed delivery's URL lands in Alertmanager's log; the token does not.

Each runs on 127.0.0.1 and a free port, with its storage in a temporary directory, Alertmanager
without clustering (``--cluster.listen-address=``). The generated files are checked by ``amtool
check-config`` and ``promtool check config`` first. Startup waits until each is ready: Alertmanager
answers ``/-/ready`` (a fraction of a second); Prometheus has scraped the exporter and found the
Alertmanager (about 5 s: it updates its discovered targets every 5 s). It fails at once, with its
log, if the process exits. On leaving the ``with``
each is stopped (SIGTERM) and its directory removed; if the body raised, the end of its log is
added to the exception as a note; if the process had died on its own, leaving raises with its log.
`Alertmanager.alerts()` is what Alertmanager holds (its API), to tell "not sent yet" from "never
received".
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.support.daemon import Daemon, Harness, check, require
from tests.support.worker import free_port

__all__ = ["Alertmanager", "require"]

BINARY = "prometheus-alertmanager"


def duration(seconds: float) -> str:
    """A duration as Alertmanager's configuration writes it (whole milliseconds: it takes no
    fractions)."""
    return f"{round(seconds * 1000)}ms"


class Alertmanager(Harness):
    """``with Alertmanager(webhook_url, bearer_token=token) as alertmanager:`` a real Alertmanager
    at ``alertmanager.url`` sending its notifications to ``webhook_url``.

    Parameters:
      webhook_url: where the webhook receiver POSTs.
      bearer_token: sent as ``Authorization: Bearer <token>`` (``http_config.authorization``);
        None sends no Authorization header.
      receiver: the receiver's name (the body's ``receiver``, regexp-escaped by Alertmanager).
      group_by: the route's ``group_by`` labels.
      group_wait, group_interval, repeat_interval: the route's timings, in seconds.
      send_resolved: the webhook's ``send_resolved``.
      webhook: more keys of the ``webhook_config`` (``max_alerts``...), over the ones above.
    """

    name = "Alertmanager"

    def __init__(
        self,
        webhook_url: str,
        *,
        bearer_token: str | None = None,
        receiver: str = "pulse",
        group_by: Sequence[str] = ("alertname",),
        group_wait: float = 1.0,
        group_interval: float = 2.0,
        repeat_interval: float = 3600.0,
        send_resolved: bool = True,
        webhook: Mapping[str, Any] | None = None,
    ) -> None:
        self.webhook_url = webhook_url
        self.bearer_token = bearer_token
        config: dict[str, Any] = {"url": webhook_url, "send_resolved": send_resolved}
        if bearer_token is not None:
            config["http_config"] = {"authorization": {"type": "Bearer", "credentials": bearer_token}}
        config.update(webhook or {})
        self.config: dict[str, Any] = {
            "route": {
                "receiver": receiver,
                "group_by": list(group_by),
                "group_wait": duration(group_wait),
                "group_interval": duration(group_interval),
                "repeat_interval": duration(repeat_interval),
            },
            "receivers": [{"name": receiver, "webhook_configs": [config]}],
        }
        self.directory = Path(tempfile.mkdtemp(prefix="pulse-alertmanager-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.daemon: Daemon | None = None
        try:
            config_file = self.directory / "alertmanager.yml"
            config_file.write_text(yaml.safe_dump(self.config, sort_keys=False))
            check("amtool", "check-config", str(config_file))
            self.daemon = daemon = Daemon(
                BINARY,
                [
                    f"--config.file={config_file}",
                    f"--storage.path={self.directory / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    f"--web.external-url={self.url}",
                    "--cluster.listen-address=",  # no gossip, no HA peers: one instance
                    "--log.level=debug",  # each flush and notify attempt, for the failures' log tail
                ],
                self.directory / "alertmanager.log",
            )
            daemon.wait_ready(lambda: daemon.answers(f"{self.url}/-/ready"), "Alertmanager to be ready")
        except BaseException:
            self.close()
            raise

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts Alertmanager holds (``GET /api/v2/alerts``), firing and recently resolved."""
        answer = requests.get(f"{self.url}/api/v2/alerts", timeout=5)
        answer.raise_for_status()
        alerts: list[dict[str, Any]] = answer.json()
        return alerts
