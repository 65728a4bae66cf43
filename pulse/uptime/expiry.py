"""Certificate expiry warnings: when the TLS certificate a check sees (https, tcp with tls, and any
kind that fills `pulse.net.Response.certificate_not_after`) is at most a threshold of days from
expiry, the component's channels are told once: an event of type ``certificate.expiring``, on
every channel whose events include it (all by default). The thresholds are the component's
``certificate_warnings`` (14 and 3 days by default; none turns them off).

A warning is claimed by its row in ``certificate_warning``, keyed by the component, the
certificate's notAfter (a renewed certificate has a new one, and warns anew) and the threshold,
with the batch's check rows and in the same transaction: two workers recording one slot, or a
batch delivered again, warn once. A certificate first seen past several thresholds (2 days from
expiry) warns once, at the smallest, and claims the larger ones with it.

It is not an outage: the status, the thresholds and incidents are the conditions' business
(``[CERTIFICATE_EXPIRATION] > 3d`` makes it one). Only a verified certificate has a notAfter to
read (a check with ``verify: false`` warns of nothing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from pulse import events
from pulse.db import db
from pulse.models import utcnow
from pulse.models.event import CERTIFICATE_EXPIRING, CHANNELS_ONLY
from pulse.net import Response

#: What a check saw, for its warnings: its component's id, its target (`Kind.target`) and its response.
Seen = tuple[int, object, Response]

DEFAULT_DAYS = (14, 3)
MAX_WARNINGS = 5  # thresholds a component may have

# Claim every threshold each certificate seen has crossed (its component's, in days): a row each,
# unless written already; then, per certificate with a new claim, its component and the smallest
# threshold newly claimed, the one its warning names.
CLAIM = """
WITH seen AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(not_after)s::timestamptz[]) AS seen (id, not_after)
), claimed AS (
    INSERT INTO certificate_warning (component_id, not_after, threshold_days, sent_at)
    SELECT seen.id, seen.not_after, t.days, %(now)s
      FROM seen JOIN component c ON c.id = seen.id
     CROSS JOIN unnest(c.certificate_warning_days) AS t (days)
     WHERE seen.not_after <= %(now)s + make_interval(days => t.days)
     ORDER BY seen.id, seen.not_after, t.days
    ON CONFLICT DO NOTHING
    RETURNING component_id, not_after, threshold_days
)
SELECT c.id, c.organization_id, c.key, c.name, claimed.not_after, min(claimed.threshold_days)
  FROM claimed JOIN component c ON c.id = claimed.component_id
 GROUP BY c.id, claimed.not_after
 ORDER BY c.id, claimed.not_after
"""


def due(response: Response, days: int) -> bool:
    """Whether the certificate a check saw is within ``days`` of expiry (a component's farthest
    threshold): only then is the database asked (`warn`), so a certificate far from expiry costs
    its check nothing."""
    not_after = response.certificate_not_after
    return not_after is not None and not_after <= utcnow() + timedelta(days=days)


def warn(checks: Sequence[Seen]) -> list[int]:
    """Claim and write the warnings the checks' certificates are due, in the caller's transaction.
    Returns the events' ids, to publish after the commit."""
    seen: dict[tuple[int, datetime], str | None] = {}
    for component_id, target, response in checks:
        if response.certificate_not_after is not None:
            seen.setdefault((component_id, response.certificate_not_after), host(target))
    if not seen:
        return []
    now = utcnow()
    ids, not_afters = zip(*seen, strict=True)
    rows = db.execute_sql(CLAIM, {"ids": list(ids), "not_after": list(not_afters), "now": now}).fetchall()
    written = []
    for component_id, organization_id, key, name, not_after, threshold in rows:
        payload = warning(key, name, seen.get((component_id, not_after)), not_after, threshold, now)
        links = {"component_id": component_id}
        written.append(events.emit(CERTIFICATE_EXPIRING, organization_id, payload, audience=CHANNELS_ONLY, **links))
    return written


def warning(
    key: str, name: str, host: str | None, not_after: datetime, threshold: int, now: datetime
) -> dict[str, Any]:
    """An event's payload: the component, the host checked, when the certificate expires, the
    whole days left (negative once it has expired) and the threshold it crossed."""
    return {
        "component": {"key": key, "name": name},
        "host": host,
        "not_after": not_after.isoformat(),
        "days_left": math.floor((not_after - now) / timedelta(days=1)),
        "threshold_days": threshold,
    }


def host(target: object) -> str | None:
    """The host a check's target connects to: its ``host``, or its ``url``'s."""
    named = getattr(target, "host", None)
    if isinstance(named, str):
        return named
    url = getattr(target, "url", None)
    return urlsplit(url).hostname if isinstance(url, str) else None
