"""The composition root: where Pulse is put together from its parts, and where its entries start.

- `serve`: what ``pulse serve`` serves, every domain's routes given to the inbound service;
- `workers`: what ``dramatiq pulse.actors`` and ``periodiq pulse.actors`` run on, the broker with
  its middleware.

Nothing below imports this package: the domains, the services (`pulse.inbound`, `pulse.rabbitmq`)
and the foundation are given what they need by it. Its modules are imported one by one (this
package imports neither), so a worker process loads no HTTP server and `pulse serve` no middleware.
"""
