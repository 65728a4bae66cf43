"""Telemetry: Pulse's own Prometheus metrics, not the vendor metrics it polls.

- `middleware`: the dramatiq middleware counting and timing every message in each worker process.
- `counters`: counters any module of a worker process adds to (rows deleted, slots skipped).
- `queues`: the queue depths, read from RabbitMQ at each scrape.
- `gauges`: the gauges each domain contributes, read from PostgreSQL at each scrape.
- `server`: the endpoint serving them all, in a dramatiq fork.

Nothing here knows a domain: `pulse.exporter` registers the domains' gauges.
"""
