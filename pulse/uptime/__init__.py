"""Uptime: checks of components on their interval, each by its kind (`kinds`: http, tcp).
`conditions` is the Gatus condition language, `check` judges what one check observed, `batch`
makes a message's checks at once, `record` writes them down (and the status changes they
cause), `due` says which checks are due (for `pulse.recurring.loop`), `overview` sums up 30
days, `spec` is the components' part of the configuration file."""
