"""Monitoring integrations: one module per vendor, each ending with its `Integration` entry;
`INTEGRATIONS` is the one list of kinds (the configuration file's choices derive from it)."""

from pulse.metrics.integrations import datadog, grafana, newrelic, pingdom, prometheus
from pulse.metrics.integrations.base import Integration, Sample

#: Every kind of integration, by kind.
INTEGRATIONS: dict[str, Integration] = {
    module.INTEGRATION.kind: module.INTEGRATION for module in (prometheus, datadog, newrelic, grafana, pingdom)
}

__all__ = ["INTEGRATIONS", "Integration", "Sample"]
