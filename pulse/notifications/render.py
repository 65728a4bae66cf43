"""What a notification says: an event row turned into a `Notice`, before any channel formats it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pulse.components import status
from pulse.models import utcnow
from pulse.models.event import (
    CERTIFICATE_EXPIRING,
    COMPONENT_STILL_DOWN,
    DOMAIN_EXPIRING,
    INCIDENT_OPENED,
    INCIDENT_RESOLVED,
    INCIDENT_UPDATED,
    ONCALL_EXHAUSTED,
    ONCALL_PAGE,
    ONCALL_REMINDER,
    STATUS_CHANGED,
)
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING, Notice
from pulse.notifications.channels.text import status_name


def render(
    event_id: int,
    kind: str,
    payload: dict[str, Any],
    created_at: datetime,
    organization: str,
    url: str | None,
    *,
    link: str | None = None,
    reply_code: str | None = None,
) -> Notice:
    """The `Notice` for an event row (its type and payload as `pulse.components.changes` writes them).
    A notification's own ``link`` (a page's acknowledgement link), when it has one, is its link; its
    ``reply_code`` (an SMS page's), when it has one, is what a reply acknowledges with."""
    linked, url = link is not None, link or url
    component = (payload.get("component") or {}).get("name")
    incident = payload.get("incident") or {}
    since = _time(payload.get("since")) or created_at
    if kind == STATUS_CHANGED:
        before, after = payload.get("from"), payload.get("to")
        return Notice(
            kind=kind,
            title=f"{component}: {status_name(after).lower()}",
            summary=f"{component} went from {status_name(before).lower()} to {status_name(after).lower()}. "
            f"{payload.get('reason') or ''}".strip(),
            organization=organization,
            since=since,
            severity=_severity(after),
            event_id=event_id,
            component=component,
            status=after,
            previous_status=before,
            url=url,
        )
    if kind in (INCIDENT_OPENED, INCIDENT_UPDATED, INCIDENT_RESOLVED):
        return _incident(event_id, kind, payload, organization, since, url)
    if kind == COMPONENT_STILL_DOWN:
        title = incident.get("title") or f"{component} incident"
        started = _time(incident.get("started_at")) or since
        impact = status_name(incident.get("impact")).lower()
        return Notice(
            kind=kind, title=f"Still down: {title}", summary=f"{component}: {impact} for {_for(started)}, still.",
            organization=organization, since=started, severity=CRITICAL, event_id=event_id, component=component,
            status=incident.get("impact"), url=url,
        )  # fmt: skip
    if kind == CERTIFICATE_EXPIRING:
        return _expiring(event_id, payload, organization, since, url)
    if kind == DOMAIN_EXPIRING:
        return _domain_expiring(event_id, payload, organization, since, url)
    if kind in (ONCALL_PAGE, ONCALL_EXHAUSTED, ONCALL_REMINDER):
        return _oncall(event_id, kind, payload, organization, url, linked=linked, reply_code=reply_code)
    return Notice(
        kind=kind, title=kind, summary=str(payload.get("summary", "")), organization=organization, since=since,
        severity=INFO, event_id=event_id, component=component, url=url,
    )  # fmt: skip


def _incident(
    event_id: int, kind: str, payload: dict[str, Any], organization: str, since: datetime, url: str | None
) -> Notice:
    """An incident opened, updated or resolved: what people wrote (``message``, from the API) when
    they wrote something, else what the change was."""
    component = (payload.get("component") or {}).get("name")
    incident = payload.get("incident") or {}
    title = incident.get("title") or f"{component} incident"
    message = payload.get("message")
    on = f" on {component}" if component else ""
    if kind == INCIDENT_OPENED:
        headline, severity, state = f"Incident opened: {title}", CRITICAL, incident.get("impact")
        when = _time(incident.get("started_at"))
        said = f"An incident was opened{' for ' + component if component else ''}: "
        said += f"{status_name(incident.get('impact')).lower()}."
    elif kind == INCIDENT_UPDATED:
        headline, severity, state, when = f"Update: {title}", INFO, incident.get("impact"), since
        said = f"The incident{on} is {str(incident.get('status') or '').lower()}."
    else:
        headline, severity, state = f"Resolved: {title}", RESOLVED, status.OPERATIONAL
        when, said = _time(incident.get("resolved_at")), f"The incident{on} is resolved."
    return Notice(
        kind=kind, title=headline, summary=message or said, organization=organization, since=when or since,
        severity=severity, event_id=event_id, component=component, status=state, url=url,
    )  # fmt: skip


def _oncall(
    event_id: int,
    kind: str,
    payload: dict[str, Any],
    organization: str,
    url: str | None,
    *,
    linked: bool,
    reply_code: str | None,
) -> Notice:
    """A page (what is down, for how long, how to acknowledge: by replying ``reply_code`` when it
    has one, with its link when ``linked``), an alert no one acknowledged, or a reminder to whoever
    acknowledged one that it is still open."""
    incident = payload.get("incident") or {}
    source = payload.get("source")  # an alert a source sent in, rather than an incident's
    if source:
        component, title, started = source.get("name"), payload.get("summary"), _time(payload.get("started_at"))
        what = str(payload.get("severity"))
    else:
        component = (payload.get("component") or {}).get("name")
        title = incident.get("title") or f"{component} incident"
        started, what = _time(incident.get("started_at")), status_name(incident.get("impact")).lower()
    started = started or utcnow()
    command = f"pulse oncall ack {payload.get('alert')}"
    if reply_code:
        ack = f"Reply {reply_code} to acknowledge{', or use the link' if linked else ''}, or: {command}"
    else:
        ack = f"Acknowledge with the link, or: {command}" if linked else f"Acknowledge: {command}"
    if kind == ONCALL_PAGE:
        headline = f"PAGE: {title}"
        summary = f"{component}: {what} for {_for(started)}. {ack}"
    elif kind == ONCALL_REMINDER:
        acknowledged = _time(payload.get("acknowledged_at")) or started
        headline = f"Reminder: {title}"
        summary = (
            f"{component}: {what} for {_for(started)}. You acknowledged it {_for(acknowledged)} ago and it is "
            f"still not resolved. When it is: pulse oncall resolve {payload.get('alert')}"
        )
    else:
        headline = f"No one acknowledged: {title}"
        summary = (
            f"The on-call alert for {component} went through {payload.get('rounds')} round(s) of the escalation "
            f"policy {payload.get('policy')} and no one acknowledged it. It stays open. {ack}"
        )
    return Notice(
        kind=kind, title=headline, summary=summary, organization=organization, since=started, severity=CRITICAL,
        event_id=event_id, component=component, url=url,
    )  # fmt: skip  # no status: every channel leads with the title, "PAGE: ..."


def _expiring(event_id: int, payload: dict[str, Any], organization: str, since: datetime, url: str | None) -> Notice:
    """A certificate days from expiry (`pulse.uptime.expiry`): which, when, and the warning it is.
    The component's status is not part of it: an expiring certificate is not an outage."""
    component = (payload.get("component") or {}).get("name")
    threshold = payload.get("threshold_days")
    left, when = _expiry(payload.get("days_left"), payload.get("not_after"))
    return Notice(
        kind=CERTIFICATE_EXPIRING, title=f"Certificate expiring: {component}",
        summary=f"The TLS certificate of {payload.get('host') or component} {left}, on {when} "
        f"(the {_days(threshold)} warning). Renew it before then.",
        organization=organization, since=since, severity=WARNING, event_id=event_id, component=component, url=url,
    )  # fmt: skip


def _domain_expiring(
    event_id: int, payload: dict[str, Any], organization: str, since: datetime, url: str | None
) -> Notice:
    """A domain's registration days from expiry (`pulse.uptime.domains`): which, when, and the
    warning it is. Not an outage either."""
    component = (payload.get("component") or {}).get("name")
    threshold = payload.get("threshold_days")
    left, when = _expiry(payload.get("days_left"), payload.get("expires_at"))
    return Notice(
        kind=DOMAIN_EXPIRING, title=f"Domain expiring: {payload.get('domain') or component}",
        summary=f"The registration of {payload.get('domain')} ({component}) {left}, on {when} "
        f"(the {_days(threshold)} warning). Renew it before then.",
        organization=organization, since=since, severity=WARNING, event_id=event_id, component=component, url=url,
    )  # fmt: skip


def _expiry(days: Any, at: Any) -> tuple[str, str]:
    """How far off an expiry is (``expires in 2 days``, ``has expired``) and when (``2026-12-07
    12:00 UTC``, or ``soon`` when the payload lacks the time)."""
    expires = _time(at)
    when = f"{expires:%Y-%m-%d %H:%M} UTC" if expires else "soon"
    return ("has expired" if isinstance(days, int) and days < 0 else f"expires in {_days(days)}"), when


def _days(n: Any) -> str:
    return "1 day" if n == 1 else f"{n} days"


def _for(started: datetime) -> str:
    """How long since ``started``: ``under a minute``, ``12 min``, ``2 h 5 min``."""
    minutes = int((utcnow() - started).total_seconds() // 60)
    if minutes < 1:
        return "under a minute"
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def _severity(to: str | None) -> str:
    if to in status.OUTAGES:
        return CRITICAL
    if to == status.DEGRADED:
        return WARNING
    if to == status.OPERATIONAL:
        return RESOLVED
    return INFO


def _time(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None
