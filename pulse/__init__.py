"""Pulse: background workers for uptime monitoring and incident response."""

__version__ = "0.1.0"
