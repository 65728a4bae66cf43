"""Bodies as the senders write them: Alertmanager 0.25's webhook (its 10 keys, Go's escapes, a
trailing newline), Grafana's, and events in the shape of PagerDuty's Events API v2."""

import json


def alertmanager(status="firing", *, group="HighLatency", alerts=None, version="4"):
    """An Alertmanager 0.25 webhook of the group alertname=``group``, as bytes."""
    alerts = alerts or [
        {
            "status": status,
            "labels": {"alertname": group, "instance": "api-1:9100", "severity": "page"},
            "annotations": {"summary": "p99 > 2s <api & web>"},
            "startsAt": "2026-12-04T09:27:06.591Z",
            "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-12-04T09:30:01Z",
            "generatorURL": "http://prom:9090/graph?g0.expr=a%3Eb&g0.tab=1",
            "fingerprint": "6a7e1f0f2c3b4d5e",
        }
    ]
    body = {
        "receiver": "team\\.ops",
        "status": status,
        "alerts": alerts,
        "groupLabels": {"alertname": group},
        "commonLabels": {"alertname": group, "instance": "api-1:9100", "severity": "page"},
        "commonAnnotations": {"summary": "p99 > 2s <api & web>"},
        "externalURL": "http://am:9093",
        "version": version,
        "groupKey": f'{{}}:{{alertname="{group}"}}',
        "truncatedAlerts": 0,
    }
    # Go's encoder escapes <, > and & and ends the body with a newline.
    text = json.dumps(body, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return (text + "\n").encode()


def grafana(status="firing", *, alertname="DiskFull", instance="db-1"):
    """A Grafana Alerting webhook (version 1) of one alert, as bytes."""
    alert = {
        "status": status,
        "labels": {"alertname": alertname, "grafana_folder": "infra", "instance": instance},
        "annotations": {"summary": "92% used"},
        "startsAt": "2026-12-01T09:51:03.157+01:00",
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "https://g.example/alerting/grafana/abc/view?orgId=1",
        "fingerprint": "c6eadffa33fcdf37",
        "silenceURL": "https://g.example/alerting/silence/new",
        "dashboardURL": "",
        "panelURL": "",
        "values": None,
        "valueString": "[ var='A' value=92 ]",
    }
    body = {
        "receiver": "pulse", "status": status, "orgId": 1, "alerts": [alert],
        "groupLabels": {"alertname": alertname}, "commonLabels": alert["labels"],
        "commonAnnotations": alert["annotations"], "externalURL": "https://g.example/", "version": "1",
        "groupKey": f'{{}}/{{}}:{{alertname="{alertname}"}}', "truncatedAlerts": 0,
        "title": f"[{status.upper()}:1] {alertname}", "state": "alerting", "message": "...",
    }  # fmt: skip
    return json.dumps(body).encode()


def event(action="trigger", key="disk-db-1", **payload):
    """An events API event, as bytes."""
    body = {"event_action": action, "dedup_key": key}
    if action == "trigger":
        body["payload"] = {"summary": "Disk 92% on db-1", "source": "db-1", "severity": "critical", **payload}
    return json.dumps(body).encode()
