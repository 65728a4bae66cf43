"""Check kinds: one module per kind of uptime check (``http``, ``tcp``, ``dns``, ``icmp``, ``tls``),
each ending with its `Kind` entry; `KINDS` is the one list of them. A kind says which fields the configuration file
offers for it and how they are validated, how they are stored on the component row, which
condition placeholders its checks resolve, how one check runs (pure of the database, returning
the `pulse.uptime.check.CheckResult` every kind's checks are recorded by) and how `pulse check`
names one. The loop, batches, thresholds, incidents and notifications see only that entry: the
kind is data on the component (its ``kind`` column), not a branch in the check code. The kinds
that speak TLS share the fields of a component's own CA (`pulse.uptime.kinds.ca`).

A new kind is a module with its `Kind` entry, added to `KINDS` and to the bases of
`pulse.uptime.spec.ComponentSpec` (its fields), and a migration widening the database's CHECK on
``component.kind``.
"""

from pulse.uptime.kinds import dns, http, icmp, tcp, tls
from pulse.uptime.kinds.kind import CLEARED, Kind, Stored

#: Every kind of check, by name.
KINDS: dict[str, Kind] = {module.KIND.name: module.KIND for module in (http, tcp, dns, icmp, tls)}

__all__ = ["CLEARED", "KINDS", "Kind", "Stored"]
