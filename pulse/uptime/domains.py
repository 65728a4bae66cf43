"""Domain expiry warnings: a component that opts in with ``domain_warnings: [30d, 7d]`` (none by
default: the lookups go to a third party, the domain's registry) tells its channels when the
registration of its host's registered domain (`pulse.uptime.rdap.registered`) is at most a
threshold of days from expiry: an event of type ``domain.expiring``, once per threshold and expiry
date (a renewal moves the date, and warns anew).

A check never looks anything up: it reads the domain's cached expiry with its component
(`pulse.uptime.record.LOAD`). `refresh`, sent every ten minutes by a tick (`schedules.domains`),
looks up the domains that have no answer yet or whose answer is a day old, a few each time, and
writes them to ``domain_expiry``: 2,000 components on one domain cost one lookup a day, and a new
domain is looked up within minutes of its first `pulse apply`.

An expiry that cannot be told (the registry does not answer, answers 404, or its record has no
expiration event: `pulse.uptime.rdap.UnknownExpiryError`) is "unknown": one WARNING line, no warning to the
channels, and never an outage. When the registry could not be asked, the expiry known before is
kept, and the domain is asked again an hour later.

Warnings are claimed as certificate ones are (`pulse.uptime.expiry`): a row in ``domain_warning``
per (component, expiry date, threshold), written with the batch's check rows in the same
transaction, so two workers recording one slot warn once.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence
from datetime import datetime, timedelta

from pulse import events
from pulse.config import get_settings
from pulse.db import db
from pulse.models import utcnow
from pulse.models.event import CHANNELS_ONLY, DOMAIN_EXPIRING
from pulse.net import AddressPolicy
from pulse.uptime import rdap

logger = logging.getLogger(__name__)

KINDS = ("http", "tcp", "tls")  # the kinds whose target has a host name
STALE_AFTER = timedelta(days=1)  # a domain is looked up again at most this often
RETRY_AFTER = timedelta(hours=1)  # or this soon, when its registry could not be asked
PER_REFRESH = 20  # domains looked up by one refresh (each within rdap.TIMEOUT_S)

# Take the domains due a lookup (none yet, or a day old) by setting their checked_at now, in one
# statement: a refresh running beside it takes none of them.
CLAIM = """
WITH due AS (
    SELECT c.domain FROM component c LEFT JOIN domain_expiry d ON d.domain = c.domain
     WHERE c.domain IS NOT NULL AND (d.checked_at IS NULL OR d.checked_at <= %(stale)s)
     GROUP BY c.domain
     ORDER BY min(d.checked_at) NULLS FIRST, c.domain
     LIMIT %(limit)s
)
INSERT INTO domain_expiry (domain, checked_at) SELECT domain, %(now)s FROM due
ON CONFLICT (domain) DO UPDATE SET checked_at = EXCLUDED.checked_at WHERE domain_expiry.checked_at <= %(stale)s
RETURNING domain
"""
WRITE = """
UPDATE domain_expiry SET expires_at = CASE WHEN %(keep)s THEN expires_at ELSE %(expires_at)s END,
       problem = %(problem)s, checked_at = %(now)s
 WHERE domain = %(domain)s
"""
# As `pulse.uptime.expiry.CLAIM`, for the domains' expiry dates.
WARN = """
WITH seen AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(expires_at)s::timestamptz[]) AS seen (id, expires_at)
), claimed AS (
    INSERT INTO domain_warning (component_id, expires_at, threshold_days, sent_at)
    SELECT seen.id, seen.expires_at, t.days, %(now)s
      FROM seen JOIN component c ON c.id = seen.id
     CROSS JOIN unnest(c.domain_warning_days) AS t (days)
     WHERE seen.expires_at <= %(now)s + make_interval(days => t.days)
     ORDER BY seen.id, seen.expires_at, t.days
    ON CONFLICT DO NOTHING
    RETURNING component_id, expires_at, threshold_days
)
SELECT c.id, c.organization_id, c.key, c.name, c.domain, claimed.expires_at, min(claimed.threshold_days)
  FROM claimed JOIN component c ON c.id = claimed.component_id
 GROUP BY c.id, claimed.expires_at
 ORDER BY c.id, claimed.expires_at
"""


def refresh(limit: int = PER_REFRESH) -> int:
    """Look up the domains due a lookup, at most ``limit``; returns how many were looked up."""
    now = utcnow()
    with db.atomic():
        domains = [row[0] for row in db.execute_sql(CLAIM, {"now": now, "stale": now - STALE_AFTER, "limit": limit})]
    bootstrap = get_settings().rdap_bootstrap_url
    for domain in domains:
        found: dict[str, object] = {"domain": domain, "expires_at": None, "problem": None, "keep": False}
        try:
            found["expires_at"] = rdap.expiry(domain, _policy(), bootstrap)
        except rdap.UnknownExpiryError as unknown:
            found.update(problem=str(unknown), keep=not unknown.answered)
            again = "in an hour, the expiry known before kept" if found["keep"] else "in a day"
            logger.warning("Domain expiry of %s unknown: %s; asked again %s.", domain, unknown, again)
        now = utcnow()
        if found["keep"]:  # due again in an hour rather than a day
            now -= STALE_AFTER - RETRY_AFTER
        with db.atomic():
            db.execute_sql(WRITE, found | {"now": now})
    return len(domains)


@functools.cache
def _policy() -> AddressPolicy:
    return AddressPolicy.from_settings(get_settings())


def due(expires_at: datetime | None, days: int) -> bool:
    """Whether a domain's cached expiry is within ``days`` (its component's farthest threshold)."""
    return expires_at is not None and expires_at <= utcnow() + timedelta(days=days)


def warn(seen: Sequence[tuple[int, datetime]]) -> list[int]:
    """Claim and write the warnings due for the (component id, domain expiry) pairs, in the
    caller's transaction. Returns the events' ids, to publish after the commit."""
    pairs = sorted(set(seen))
    if not pairs:
        return []
    now = utcnow()
    ids, dates = zip(*pairs, strict=True)
    rows = db.execute_sql(WARN, {"ids": list(ids), "expires_at": list(dates), "now": now}).fetchall()
    written = []
    for component_id, organization_id, key, name, domain, expires_at, threshold in rows:
        payload = {
            "component": {"key": key, "name": name},
            "domain": domain,
            "expires_at": expires_at.isoformat(),
            "days_left": math.floor((expires_at - now) / timedelta(days=1)),  # negative once expired
            "threshold_days": threshold,
        }
        links = {"component_id": component_id}
        written.append(events.emit(DOMAIN_EXPIRING, organization_id, payload, audience=CHANNELS_ONLY, **links))
    return written
