"""Pulse's dramatiq middleware, one per module; `pulse.broker.build_middleware` orders them."""
