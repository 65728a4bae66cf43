"""An organization with on call (`tests.oncall.test_spec.STEADY`: level 1 pages carol by sms) and
three alert sources, one of each kind; the events API's routes alerts of the group "database" to
the policy ``dba``, which pages dave."""

import pytest

from pulse import configfile
from tests.oncall.test_spec import STEADY

EVENTS_TOKEN, ALERTMANAGER_TOKEN, GRAFANA_TOKEN = "e" * 32, "a" * 32, "g" * 32

FILE = STEADY.replace(
    "    components:\n",
    """      - key: dba
        levels: [{targets: [{person: dave}], wait: 5m}]
        contact: [email]
    alert_sources:
      - key: app
        name: App
        kind: events
        token: "${EVENTS_TOKEN}"
        escalation_policy: default
        routes:
          - {match: {group: database}, escalation_policy: dba}
      - {key: prometheus, name: Prometheus, kind: alertmanager, token: "${ALERTMANAGER_TOKEN}",
         escalation_policy: default}
      - {key: grafana, name: Grafana, kind: grafana, token: "${GRAFANA_TOKEN}", escalation_policy: default}
    components:
""",
)


@pytest.fixture
def sources(database, monkeypatch):
    """The organization of `FILE`, applied."""
    monkeypatch.setenv("EVENTS_TOKEN", EVENTS_TOKEN)
    monkeypatch.setenv("ALERTMANAGER_TOKEN", ALERTMANAGER_TOKEN)
    monkeypatch.setenv("GRAFANA_TOKEN", GRAFANA_TOKEN)
    configfile.apply(configfile.load(FILE))
