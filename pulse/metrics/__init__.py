"""Metrics: queries polled from monitoring systems on their interval, a data point per poll, and
thresholds that drive a component's status through the same state machine as uptime checks.
`integrations/` has one module per vendor, `poll` runs and records one poll, `due` says which
polls are due (for `pulse.recurring.loop`), `spec` is their part of the configuration file."""
