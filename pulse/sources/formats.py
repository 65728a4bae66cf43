"""What an alert source's request says, read from its body: `Received`, or ValueError naming each
problem. Three formats:

- ``events``: an events API in the shape of PagerDuty's Events API v2 ("Send an Alert Event",
  developer.pagerduty.com): ``event_action`` trigger, acknowledge or resolve; ``dedup_key`` (up to 255
  characters; a trigger without one gets a new key, so it opens a new alert); for a trigger a
  ``payload`` with ``summary`` (up to 1024 characters), ``source``, ``severity`` (critical, error,
  warning or info) and optional ``timestamp``, ``component``, ``group``, ``class`` and
  ``custom_details``. A ``routing_key`` is ignored: the source's token says who sends.
- ``alertmanager``: Prometheus Alertmanager's webhook (``webhook_config``, "Configuration" in the
  Alertmanager documentation): ``version`` "4", ``groupKey``, ``status``, ``alerts``. Each request is
  the state of one group: firing is a trigger of the group's key, resolved a resolve.
- ``grafana``: Grafana Alerting's webhook contact point ("Configure webhook notifications" in
  Grafana's documentation): ``version`` "1" and the same group fields. Its "Test" button sends an
  alert named TestAlert, which `is_test` recognises: it pages no one.

An alert's labels (`Received.labels`) are what routing matches: a group's common labels, or an
event's severity, source, component, group and class. A group's severity is one of the events API's
four, read from its common ``severity`` label by `severity` (``page`` is critical); the label stays
in the labels and the alerts' details as it came.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from typing import Any

from pulse.inbound import jsonbody
from pulse.models.alert_source import ACKNOWLEDGE, ALERTMANAGER, GRAFANA, RESOLVE, TRIGGER

SEVERITIES = ("critical", "error", "warning", "info")
MAX_KEY = 255
MAX_SUMMARY = 1024
_VERSIONS = {ALERTMANAGER: "4", GRAFANA: "1"}
_ALERT_FIELDS = ("status", "labels", "annotations", "startsAt", "endsAt", "fingerprint", "generatorURL")
_GRAFANA_FIELDS = ("silenceURL", "dashboardURL", "panelURL", "values")
# The severity labels of alerting rules in the wild (Prometheus mixins, Grafana, Zabbix's levels,
# P1 to P5), as the events API's four; any other label, and none, is an error.
_LABELS = {
    "critical": ("critical", "crit", "page", "fatal", "emergency", "emerg", "alert", "disaster", "p1", "sev1"),
    "error": ("error", "err", "high", "major", "p2", "sev2"),
    "warning": ("warning", "warn", "medium", "average", "minor", "p3", "sev3"),
    "info": ("info", "informational", "information", "notice", "low", "none", "ok", "debug", "p4", "p5", "sev4"),
}
_SEVERITY_OF = {label: severity for severity, labels in _LABELS.items() for label in labels}


@dataclasses.dataclass(frozen=True)
class Received:
    """One event of an alert: ``action`` (trigger, acknowledge, resolve) of the alert keyed
    ``dedup_key``; what it says (``summary``, ``severity``), its ``labels`` (for routing) and the rest
    as it came (``details``)."""

    action: str
    dedup_key: str
    summary: str
    severity: str
    labels: dict[str, str]
    details: dict[str, Any]


def parse(kind: str, body: bytes) -> Received:
    """The event a request of a source of ``kind`` carries. Raises ValueError whose args are the
    problems found, each naming its field.

    The body is read by `pulse.inbound.jsonbody`: a NUL or a lone surrogate in a text is replaced
    with U+FFFD, and the event's details say how many were (``note``), so an Alertmanager group
    with a NUL in a label is still paged; NaN, Infinity and nesting deeper than its bound are refused."""
    document, replaced = jsonbody.loads(body)
    if not isinstance(document, dict):
        raise ValueError("the body is not a JSON object")
    received = _event(document) if kind not in _VERSIONS else _group(kind, document)
    if not replaced:
        return received
    note = f"{replaced} character(s) PostgreSQL cannot store (NUL, lone surrogates) were replaced with U+FFFD"
    return dataclasses.replace(received, details={**received.details, "note": note})


def is_test(kind: str, received: Received) -> bool:
    """Whether this is Grafana's "Test" button: one alert, TestAlert of the instance Grafana."""
    alerts = received.details.get("alerts", [])
    return kind == GRAFANA and all(
        a["labels"].get("alertname") == "TestAlert" and a["labels"].get("instance") == "Grafana" for a in alerts
    )


def _event(document: dict[str, Any]) -> Received:
    problems = []
    action = document.get("event_action")
    if action not in (TRIGGER, ACKNOWLEDGE, RESOLVE):
        problems.append("event_action must be trigger, acknowledge or resolve")
    key = document.get("dedup_key")
    if key is None and action == TRIGGER:
        key = uuid.uuid4().hex
    elif not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY:
        problems.append(f"dedup_key must be a text of 1 to {MAX_KEY} characters")
    payload = document.get("payload")
    if action != TRIGGER:  # senders such as Alertmanager send a payload with a resolve: ignored
        if problems:
            raise ValueError(*problems)
        return Received(str(action), str(key), "", "", {}, {})
    if not isinstance(payload, dict):
        raise ValueError(*problems, "payload must be an object: a trigger needs summary, source and severity")
    summary, source, severity = payload.get("summary"), payload.get("source"), payload.get("severity")
    if not isinstance(summary, str) or not 1 <= len(summary) <= MAX_SUMMARY:
        problems.append(f"payload.summary must be a text of 1 to {MAX_SUMMARY} characters")
    if not isinstance(source, str) or not 1 <= len(source) <= MAX_KEY:
        problems.append(f"payload.source must be a text of 1 to {MAX_KEY} characters")
    if severity not in SEVERITIES:
        problems.append(f"payload.severity must be one of {', '.join(SEVERITIES)}")
    details = payload.get("custom_details", {})
    if not isinstance(details, dict):
        problems.append("payload.custom_details must be an object")
    labels = {name: payload[name] for name in ("component", "group", "class") if name in payload}
    if any(not isinstance(value, str) for value in labels.values()):
        problems.append("payload.component, group and class must be texts")
    if problems:
        raise ValueError(*problems)
    extra: dict[str, Any] = {name: document[name] for name in ("client", "client_url", "links") if name in document}
    kept: dict[str, Any] = {"custom_details": details, "timestamp": payload.get("timestamp"), **extra}
    labels = {"severity": str(severity), "source": str(source), **labels}
    return Received(TRIGGER, str(key), str(summary), str(severity), labels, kept)


def _group(kind: str, document: dict[str, Any]) -> Received:
    version = _VERSIONS[kind]
    if document.get("version") != version:
        raise ValueError(f"version must be {version!r}: this route takes {kind}'s own webhook, not a custom payload")
    problems = []
    group_key, status, alerts = document.get("groupKey"), document.get("status"), document.get("alerts")
    if not isinstance(group_key, str) or not group_key:
        problems.append("groupKey must be a text")
    if status not in ("firing", "resolved"):
        problems.append("status must be firing or resolved")
    if not isinstance(alerts, list) or not alerts:
        problems.append("alerts must be a list of at least one alert")
        alerts = []
    for i, alert in enumerate(alerts):
        if not isinstance(alert, dict) or not isinstance(alert.get("labels"), dict):
            problems.append(f"alerts[{i}] must be an object with labels")
    common = document.get("commonLabels") or {}
    annotations = document.get("commonAnnotations") or {}
    if not isinstance(common, dict) or not isinstance(annotations, dict):
        problems.append("commonLabels and commonAnnotations must be objects")
    if problems:
        raise ValueError(*problems)
    firing = sum(1 for alert in alerts if alert.get("status") == "firing")
    named = annotations.get("summary") or common.get("alertname") or group_key
    summary = str(named if firing <= 1 else f"{named} ({firing} firing)")[:MAX_SUMMARY]
    fields = _ALERT_FIELDS + (_GRAFANA_FIELDS if kind == GRAFANA else ())
    details = {
        "alerts": [{name: alert[name] for name in fields if name in alert} for alert in alerts],
        "group_labels": document.get("groupLabels") or {},
        "common_annotations": annotations,
        "truncated_alerts": document.get("truncatedAlerts", 0),
        "external_url": document.get("externalURL", ""),
    }
    return Received(
        action=TRIGGER if status == "firing" else RESOLVE,
        dedup_key=_key(str(group_key)),
        summary=summary,
        severity=severity(common.get("severity")),
        labels={str(name): str(value) for name, value in common.items()},
        details=details,
    )


def severity(label: object) -> str:
    """One of `SEVERITIES` for a group's ``severity`` label: ``page`` is critical, ``warn``
    warning, ``P3`` warning; an unknown label (or none) is error."""
    return _SEVERITY_OF.get(label.strip().lower(), "error") if isinstance(label, str) else "error"


def _key(group_key: str) -> str:
    """A group's key as the alert's: itself, or its SHA-256 when it is longer than a key may be."""
    if len(group_key) <= MAX_KEY:
        return group_key
    return "sha256:" + hashlib.sha256(group_key.encode()).hexdigest()
