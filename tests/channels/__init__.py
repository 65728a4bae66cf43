"""What the channel tests share: a notice, an incident, absurd input, and `replace` to vary them."""

import dataclasses
from datetime import UTC, datetime

from pulse.notifications.channels.notice import CRITICAL, WARNING, Notice

SINCE = datetime(2026, 12, 1, 14, 3, 27, tzinfo=UTC)
URL = "https://status.acme.test/incidents/7"

NOTICE = Notice(
    kind="component.status_changed",
    title="Public API: major outage",
    summary="3 checks in a row failed: connection refused.",
    organization="Acme",
    since=SINCE,
    severity=CRITICAL,
    event_id=42,
    component="Public API",
    status="MAJOR_OUTAGE",
    previous_status="OPERATIONAL",
    url=URL,
)
INCIDENT = Notice(
    kind="incident.opened",
    title="Login failures",
    summary="Some users cannot sign in.",
    organization="Acme",
    since=SINCE,
    severity=WARNING,
    event_id=43,
)

# Absurd input: 100,000 characters of emoji, accents, HTML, mrkdwn, mentions and newlines.
NOISE = "Ünïcødé 🚀👩‍💻 <script>alert(1)</script> *bold* _it_ <!channel> @everyone & [x](http://e.vil)\n"
HUGE = (NOISE * (100_000 // len(NOISE) + 1))[:100_000]
ABSURD = dataclasses.replace(NOTICE, title=HUGE, summary=HUGE, organization=HUGE, component=HUGE)


def replace(notice: Notice = NOTICE, **changes) -> Notice:
    return dataclasses.replace(notice, **changes)
