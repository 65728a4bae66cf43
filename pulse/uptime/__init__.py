"""Uptime: HTTP checks of components on their interval. `conditions` is the Gatus condition
language, `check` makes one check, `record` writes it down (and the status change it causes),
`schedule` says which checks are due (for `pulse.recurring.loop`), `overview` sums up 30 days, `spec` is the
components' part of the configuration file."""
