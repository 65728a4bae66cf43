"""Local fakes of the notification vendors' APIs: Resend, Twilio, Slack, Discord, Teams, a webhook receiver, Web Push
and SMTP.

    with Vendors() as vendors:
        hook = vendors.slack_hook()
        vendors.script("slack", Fail(500), Hang())
        ...notify through Pulse...
        [message] = vendors.wait_received("slack", 1)
        assert message.json["text"] == "down"

One ThreadingHTTPServer on 127.0.0.1 serves every HTTP vendor under a path prefix (/resend, /twilio, /slack,
/discord, /teams, /webhook, /push) and an aiosmtpd server takes mail. Each fake checks what the real API checks
(credentials, required fields, size limits, rate limits) and answers with that vendor's status and error body; its
module, one per vendor as in `pulse.notifications.channels`, names the vendor's documentation it follows. Every
request is recorded in `Vendors.attempts`; accepted ones also in `Vendors.received`. `Vendors.script` replaces the
next answers with a `Fail`, a `Hang` or, as a hostile vendor, proxy or gateway would answer, a `Forge`. Hangs wait on
an event that `Vendors.close` sets, and close shuts the open connections, so closing never waits for a client.

`base` holds what the fakes share (the records, the `Fake` base class, the HTTP server, the rate-limit buckets) and
`facade` the `Vendors` object in front of them all.
"""

from tests.support.vendors.base import Fail, Forge, Hang, Received
from tests.support.vendors.facade import VENDORS, Vendors

__all__ = ["VENDORS", "Fail", "Forge", "Hang", "Received", "Vendors"]
