"""Email, through Resend or SMTP: a subject, a plain-text body and a small HTML body.

Resend's documentation: "Send Email" (https://resend.com/docs/api-reference/emails/send-email) and
"Idempotency Keys" (https://resend.com/docs/dashboard/emails/idempotency-keys).

The HTML is self-contained (inline styles only, no images) and escapes every text it shows.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import smtplib
from email.message import EmailMessage
from email.utils import formatdate
from html import escape
from urllib.parse import SplitResult, unquote, urlsplit

from pulse.config import Settings
from pulse.net import AddressPolicy, Request
from pulse.net.api import quote
from pulse.notifications.channels.notice import INFO, Notice
from pulse.notifications.channels.text import COLORS, change, filled, headline, link, shorten, status_name, when
from pulse.notifications.channels.transport import (
    JSON,
    Channel,
    Destination,
    Sent,
    TransportError,
    field,
    json_field,
    post,
)

SUBJECT_MAX = 200
ORGANIZATION_MAX = 60  # in the subject, so the headline still shows
TITLE_MAX = 1000
SUMMARY_MAX = 10_000
NAME_MAX = 200


@dataclasses.dataclass(frozen=True)
class Email:
    subject: str  # one line
    text: str
    html: str


def render(notice: Notice) -> Email:
    """The email for ``notice``: "[Acme] Public API: major outage" and its two bodies."""
    organization = shorten(filled(notice.organization), NAME_MAX)
    title = shorten(headline(notice), TITLE_MAX)
    subject = shorten(f"[{shorten(organization, ORGANIZATION_MAX)}] {title}", SUBJECT_MAX, one_line=True)
    summary = shorten(notice.summary.strip(), SUMMARY_MAX)
    since = when(notice.since)
    status = change(notice)
    facts = [
        ("Component", shorten(filled(notice.component), NAME_MAX) if notice.component else None),
        ("Status", shorten(status, NAME_MAX) if status else None),
        ("Since", since),
        ("Organization", organization),
    ]
    shown = [(label, value) for label, value in facts if value is not None]
    url = link(notice)
    lines = [title, ""] + ([summary, ""] if summary else []) + [f"{label}: {value}" for label, value in shown]
    lines += ["", f"View: {url}"] if url else []
    lines += ["", "-- ", "Sent by Pulse"]
    return Email(subject, "\n".join(lines) + "\n", _html(notice, subject, title, summary, shown, url))


def _html(notice: Notice, subject: str, title: str, summary: str, facts: list[tuple[str, str]], url: str | None) -> str:
    """The HTML body: a colored status line, the title, the summary, the facts and a "View" button."""
    color = f"#{COLORS.get(notice.severity, COLORS[INFO]):06X}"
    state = shorten(status_name(notice.status) if notice.status else notice.severity.capitalize(), NAME_MAX)
    rows = "".join(
        f'<tr><td style="padding:4px 12px 4px 0;color:#616061;vertical-align:top;">{label}</td>'
        f'<td style="padding:4px 0;word-break:break-word;">{escape(value)}</td></tr>'
        for label, value in facts
    )
    button = (
        f'<p style="margin:20px 0;"><a href="{escape(url)}" style="display:inline-block;padding:10px 20px;'
        f'background:#1D1C1D;color:#FFFFFF;text-decoration:none;border-radius:6px;font-weight:bold;">View</a></p>'
        if url
        else ""
    )
    text = escape(summary).replace("\n", "<br>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(subject)}</title></head>"
        '<body style="margin:0;padding:0;background:#F4F4F5;">'
        '<div style="max-width:560px;margin:0 auto;padding:24px 16px;font-family:-apple-system,'
        "'Segoe UI',Helvetica,Arial,sans-serif;font-size:16px;line-height:1.5;color:#1D1C1D;\">"
        '<div style="background:#FFFFFF;border-radius:8px;padding:20px;">'
        f'<p style="margin:0 0 12px;padding:8px 12px;border-left:4px solid {color};background:#F8F8F8;">'
        f'<span style="color:{color};">&#9679;</span> <strong>{escape(state)}</strong> since {when(notice.since)}</p>'
        f'<h1 style="margin:0 0 12px;font-size:20px;line-height:1.3;word-break:break-word;">{escape(title)}</h1>'
        + (f'<p style="margin:0 0 16px;word-break:break-word;">{text}</p>' if text else "")
        + f'<table role="presentation" style="border-collapse:collapse;font-size:14px;">{rows}</table>'
        f"{button}</div>"
        '<p style="margin:16px 0 0;font-size:12px;color:#616061;">Sent by Pulse</p>'
        "</div></body></html>"
    )


# --- sending -----------------------------------------------------------------------------------

TRUSTED = AddressPolicy(allow_private=True, allow_link_local=True)  # the operator's own settings


def deliver(notice: Notice, destination: Destination, settings: Settings, policy: AddressPolicy) -> Sent:
    """Send through Resend when a key is set (its Idempotency-Key makes a retry harmless), else
    through SMTP (the Message-ID is the delivery id, for the receiver to dedupe)."""
    if not settings.email_from:
        raise TransportError("email has no sender: set PULSE_EMAIL_FROM", permanent=True)
    email = render(notice)
    to = destination.settings["to"]
    to = [to] if isinstance(to, str) else list(to)  # a subscriber's address, or a channel's list
    if settings.resend_api_key:
        return _resend(email, to, destination.delivery_id, settings)
    if settings.smtp_url:
        return _smtp(email, to, destination.delivery_id, settings)
    raise TransportError("email is not configured: set PULSE_RESEND_API_KEY or PULSE_SMTP_URL", permanent=True)


def _resend(email: Email, to: list[str], delivery_id: str, settings: Settings) -> Sent:
    document = {"from": settings.email_from, "to": to, "subject": email.subject, "text": email.text, "html": email.html}
    return post(
        settings.resend_url.rstrip("/") + "/emails",
        json.dumps(document),
        {**JSON, "Authorization": f"Bearer {settings.resend_api_key}", "Idempotency-Key": delivery_id},
        TRUSTED,
        vendor="Resend",
        timeout_s=settings.notify_timeout_s,
        reason=json_field("message", "name"),
        reference=field("id"),
    )


def _smtp(email: Email, to: list[str], delivery_id: str, settings: Settings) -> Sent:
    url = urlsplit(settings.smtp_url)
    host = url.hostname or "localhost"
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = settings.email_from, ", ".join(to), email.subject
    message["Message-ID"] = f"<{delivery_id}@{host}>"
    message["Date"] = formatdate(localtime=False)
    message.set_content(email.text)
    message.add_alternative(email.html, subtype="html")
    try:
        if url.scheme == "smtps":
            client: smtplib.SMTP = smtplib.SMTP_SSL(host, url.port or 465, timeout=settings.notify_timeout_s)
        else:
            client = smtplib.SMTP(host, url.port or 587, timeout=settings.notify_timeout_s)
        with client:
            client.ehlo()
            if url.scheme == "smtp" and client.has_extn("starttls"):
                client.starttls()
                client.ehlo()
            if url.username:
                client.login(unquote(url.username), unquote(url.password or ""))
            client.send_message(message)
    except smtplib.SMTPAuthenticationError as e:
        raise TransportError(f"SMTP server {host} refused the login ({e.smtp_code})", permanent=True) from None
    except smtplib.SMTPRecipientsRefused as e:
        codes = sorted({code for code, _ in e.recipients.values()})
        raise TransportError(
            f"SMTP server {host} refused the recipients ({', '.join(map(str, codes))})", permanent=min(codes) >= 500
        ) from None
    except smtplib.SMTPResponseException as e:
        said = e.smtp_error.decode("utf-8", "replace") if isinstance(e.smtp_error, bytes) else e.smtp_error
        raise TransportError(
            f"SMTP server {host} answered {e.smtp_code}: {quote(_login(url), said)}", permanent=e.smtp_code >= 500
        ) from None
    except (smtplib.SMTPException, OSError) as e:
        raise TransportError(f"SMTP server {host}: {quote(_login(url), f'{type(e).__name__}: {e}')}") from None
    return Sent(reference=message["Message-ID"])


def _login(url: SplitResult) -> Request:
    """The SMTP session as `pulse.net.api.quote` reads a request, for what the server says: its URL
    (the password) and the login as AUTH PLAIN and LOGIN send it, none of which a reply may repeat."""
    user, password = unquote(url.username or ""), unquote(url.password or "")
    sent = {"auth-plain": _base64(f"\0{user}\0{password}"), "auth-login": _base64(password)} if password else {}
    return Request("AUTH", url.geturl(), sent)


def _base64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _account_pace(settings: Settings) -> tuple[str, float] | None:
    """Resend allows 2 requests a second per team, whatever the recipients: 10 % to spare."""
    return ("resend", 0.55) if settings.resend_api_key else None


CHANNEL = Channel(
    kind="email",
    label="Email",
    deliver=deliver,
    fields=("to",),
    subscriber="email",
    address="to",
    account_pace=_account_pace,
    deduplicated=True,  # Resend's Idempotency-Key, SMTP's Message-ID
)
