"""Pulse's dramatiq middleware, one per module; `pulse.rabbitmq.broker.build_middleware` orders them."""
