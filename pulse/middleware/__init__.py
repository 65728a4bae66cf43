"""Pulse's dramatiq middleware, one per module; `pulse.app.workers.build_middleware` orders them."""
