"""Telemetry tests."""
