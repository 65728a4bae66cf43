"""The calculated-metrics tests feed formulas from a real Prometheus, as the metrics tests do."""

from tests.metrics.conftest import prometheus, prometheus_server  # noqa: F401 - fixtures
