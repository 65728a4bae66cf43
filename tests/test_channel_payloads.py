"""The channels' pure payload builders: what each vendor receives, within its limits, escaped."""

import dataclasses
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from pulse.notifications.channels import discord, email, push, slack, sms, teams, webhook
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING, Notice
from pulse.notifications.channels.text import (
    COLORS,
    STATUS_NAMES,
    fit,
    json_length,
    shorten,
    shorten_bytes,
    status_name,
    when,
)

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


# text


@pytest.mark.parametrize(
    "text, limit, one_line, expected",
    [
        ("hello", 10, False, "hello"),
        ("hello", 5, False, "hello"),
        ("hello world", 5, False, "hell…"),
        ("hello world", 6, False, "hello…"),
        ("hello world", 7, False, "hello…"),  # no space before the ellipsis
        ("hello world", 1, False, "…"),
        ("hello world", 0, False, ""),
        ("", 0, False, ""),
        ("🚀🚀🚀", 2, False, "🚀…"),
        ("a  b\n\t c ", 10, True, "a b c"),
        ("a  b\n\t c ", 10, False, "a  b\n\t c "),
        ("line one\nline two", 12, True, "line one li…"),
    ],
)
def test_shorten(text, limit, one_line, expected):
    assert shorten(text, limit, one_line=one_line) == expected
    assert len(shorten(text, limit, one_line=one_line)) <= max(limit, 0)


@pytest.mark.parametrize(
    "text, limit, expected",
    [
        ("héllo", 6, "héllo"),
        ("héllo", 5, "h…"),  # "é" is 2 bytes: never split
        ("hello world", 8, "hello…"),
        ("🚀🚀", 8, "🚀🚀"),
        ("🚀🚀", 7, "🚀…"),
        ("🚀🚀", 6, "…"),
        ("abc", 3, "abc"),
        ("abcd", 3, "…"),
        ("abcd", 2, "ab"),  # no room for "…"
        ("abcd", 0, ""),
    ],
)
def test_shorten_bytes(text, limit, expected):
    assert shorten_bytes(text, limit) == expected
    assert len(shorten_bytes(text, limit).encode()) <= limit


@pytest.mark.parametrize(
    "dt, expected",
    [
        (SINCE, "2026-12-01 14:03 UTC"),
        (datetime(2026, 12, 1, 16, 3, 59, tzinfo=timezone(timedelta(hours=2))), "2026-12-01 14:03 UTC"),
        (datetime(2026, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-5))), "2027-01-01 04:59 UTC"),
        (datetime(2026, 1, 2, 3, 4), "2026-01-02 03:04 UTC"),  # naive: taken as UTC
    ],
)
def test_when(dt, expected):
    assert when(dt) == expected


@pytest.mark.parametrize(
    "status, expected",
    [
        ("OPERATIONAL", "Operational"),
        ("DEGRADED_PERFORMANCE", "Degraded performance"),
        ("PARTIAL_OUTAGE", "Partial outage"),
        ("MAJOR_OUTAGE", "Major outage"),
        ("UNDER_MAINTENANCE", "Under maintenance"),
        ("SOMETHING_NEW", "Something new"),
        ("X" * 500, "X" + "x" * 98 + "…"),
        (None, "Unknown"),
    ],
)
def test_status_name(status, expected):
    assert status_name(status) == expected


@pytest.mark.parametrize(
    "text, limit, escape, measure, expected",
    [
        ("a&b", 10, slack.escape, len, "a&amp;b"),
        ("&" * 10, 12, slack.escape, len, "&amp;&amp;…"),  # an entity is never cut in half
        ("<<", 4, slack.escape, len, "…"),
        ("éé", 12, None, json_length, "éé"),  # "\u00e9" is 6 bytes in JSON
        ("ééé", 12, None, json_length, "é…"),
        ("abc", 0, slack.escape, len, ""),
    ],
)
def test_fit(text, limit, escape, measure, expected):
    assert fit(text, limit, escape=escape, measure=measure) == expected


def test_every_severity_has_a_color():
    assert set(COLORS) == {CRITICAL, WARNING, RESOLVED, INFO}
    assert COLORS[CRITICAL] == 0xE01E5A
    assert len(STATUS_NAMES) == 5


# Slack


def test_slack_payload():
    body = slack.payload(NOTICE)
    assert body["text"] == "[Acme] Public API: major outage since 2026-12-01 14:03 UTC"
    header, section, context, actions = body["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": "Public API: major outage"}}
    assert section == {
        "type": "section",
        "text": {
            "type": "mrkdwn",
            "text": "3 checks in a row failed: connection refused.\n\n"
            "*Status:* Operational → Major outage\n*Since:* 2026-12-01 14:03 UTC",
        },
    }
    assert context == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "Acme"}, {"type": "mrkdwn", "text": "Public API"}],
    }
    assert actions == {
        "type": "actions",
        "elements": [{"type": "button", "text": {"type": "plain_text", "text": "View"}, "url": URL}],
    }


def test_slack_payload_without_component_status_or_url():
    body = slack.payload(INCIDENT)
    assert [block["type"] for block in body["blocks"]] == ["header", "section", "context"]
    assert body["blocks"][1]["text"]["text"] == "Some users cannot sign in.\n\n*Since:* 2026-12-01 14:03 UTC"
    assert body["blocks"][2]["elements"] == [{"type": "mrkdwn", "text": "Acme"}]


def test_slack_escapes_user_text():
    notice = replace(
        title="<script>x</script> & co", summary="ping <!channel> & <@U123> <http://e.vil|click>", organization="A&B"
    )
    body = slack.payload(notice)
    dumped = json.dumps(body)
    assert "<!channel>" not in dumped and "<script>" not in dumped and "<http" not in dumped
    assert body["blocks"][0]["text"]["text"] == "&lt;script&gt;x&lt;/script&gt; &amp; co"
    assert body["blocks"][1]["text"]["text"].startswith(
        "ping &lt;!channel&gt; &amp; &lt;@U123&gt; &lt;http://e.vil|click&gt;\n\n"
    )
    assert body["blocks"][2]["elements"][0]["text"] == "A&amp;B"
    assert body["text"].startswith("[A&amp;B] &lt;script&gt;")


def test_slack_limits_count_escaped_text():
    body = slack.payload(replace(title="&" * 200, summary="<" * 5000))
    header = body["blocks"][0]["text"]["text"]
    assert len(header) <= 150 and header.endswith("…") and "&am…" not in header
    assert set(header[:-1].split("&amp;")) == {""}
    assert len(body["blocks"][1]["text"]["text"]) <= 3000


# Discord


def test_discord_payload():
    body = discord.payload(NOTICE)
    assert body == {
        "embeds": [
            {
                "title": "Public API: major outage",
                "description": "3 checks in a row failed: connection refused.",
                "url": URL,
                "color": COLORS[CRITICAL],
                "timestamp": "2026-12-01T14:03:27+00:00",
                "fields": [
                    {"name": "Status", "value": "Operational → Major outage", "inline": True},
                    {"name": "Since", "value": "2026-12-01 14:03 UTC", "inline": True},
                    {"name": "Organization", "value": "Acme", "inline": True},
                ],
                "footer": {"text": "Pulse"},
            }
        ],
        "allowed_mentions": {"parse": []},
    }


def test_discord_payload_without_status_or_url():
    embed = discord.payload(INCIDENT)["embeds"][0]
    assert "url" not in embed
    assert embed["color"] == COLORS[WARNING]
    assert [field["name"] for field in embed["fields"]] == ["Since", "Organization"]


def test_discord_never_pings_and_escapes_markdown():
    notice = replace(
        title="**Down** @everyone", summary="@here <@&123> [click](http://e.vil) `x`", organization="_Acme_"
    )
    body = discord.payload(notice)
    embed = body["embeds"][0]
    assert body["allowed_mentions"] == {"parse": []}
    assert "content" not in body
    assert embed["title"] == r"\*\*Down\*\* @everyone"
    assert embed["description"] == r"@here \<@&123\> \[click\](http://e.vil) \`x\`"
    assert embed["fields"][-1]["value"] == r"\_Acme\_"


# Teams


def test_teams_payload():
    body = teams.payload(NOTICE)
    assert body["type"] == "message"
    (attachment,) = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["contentUrl"] is None
    card = attachment["content"]
    assert card["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.4")
    title, summary, facts = card["body"]
    assert title == {
        "type": "TextBlock",
        "text": "Public API: major outage",
        "weight": "Bolder",
        "size": "Medium",
        "wrap": True,
        "color": "Attention",
    }
    assert summary == {"type": "TextBlock", "text": "3 checks in a row failed: connection refused.", "wrap": True}
    assert facts == {
        "type": "FactSet",
        "facts": [
            {"title": "Status", "value": "Operational → Major outage"},
            {"title": "Since", "value": "2026-12-01 14:03 UTC"},
            {"title": "Organization", "value": "Acme"},
        ],
    }
    assert card["actions"] == [{"type": "Action.OpenUrl", "title": "View", "url": URL}]


@pytest.mark.parametrize(
    "severity, color", [(CRITICAL, "Attention"), (WARNING, "Warning"), (RESOLVED, "Good"), (INFO, "Accent")]
)
def test_teams_title_color_follows_severity(severity, color):
    assert teams.payload(replace(severity=severity))["attachments"][0]["content"]["body"][0]["color"] == color


def test_teams_payload_without_status_or_url():
    card = teams.payload(INCIDENT)["attachments"][0]["content"]
    assert "actions" not in card
    assert [fact["title"] for fact in card["body"][2]["facts"]] == ["Since", "Organization"]


# Webhook


def test_webhook_payload():
    assert webhook.payload(NOTICE, "d-1") == {
        "id": "d-1",
        "type": "component.status_changed",
        "event_id": 42,
        "occurred_at": "2026-12-01T14:03:27+00:00",
        "severity": "critical",
        "title": "Public API: major outage",
        "summary": "3 checks in a row failed: connection refused.",
        "url": URL,
        "organization": {"name": "Acme"},
        "component": {"name": "Public API", "status": "MAJOR_OUTAGE", "previous_status": "OPERATIONAL"},
    }


def test_webhook_payload_without_component_or_url():
    body = webhook.payload(INCIDENT, "d-2")
    assert body["component"] is None
    assert body["url"] is None
    assert body["type"] == "incident.opened"


def test_webhook_signature():
    body = b'{"id":"d-1"}'
    expected = hmac.new(b"s3cret", b"1764597807." + body, hashlib.sha256).hexdigest()
    assert webhook.sign("s3cret", 1764597807, body) == "v1=" + expected
    assert webhook.sign("other", 1764597807, body) != "v1=" + expected
    assert webhook.sign("s3cret", 1764597808, body) != "v1=" + expected


@pytest.mark.parametrize("secret", ["s3cret", None, ""])
def test_webhook_headers(secret):
    body = b"{}"
    headers = webhook.headers("d-1", "incident.opened", 1764597807, body, secret)
    expected = {
        "Content-Type": "application/json",
        "X-Pulse-Delivery": "d-1",
        "X-Pulse-Event": "incident.opened",
        "X-Pulse-Timestamp": "1764597807",
    }
    if secret:
        expected["X-Pulse-Signature"] = webhook.sign(secret, 1764597807, body)
    assert headers == expected


# Email


def test_email_render():
    mail = email.render(NOTICE)
    assert mail.subject == "[Acme] Public API: major outage"
    assert mail.text == (
        "Public API: major outage\n\n"
        "3 checks in a row failed: connection refused.\n\n"
        "Component: Public API\n"
        "Status: Operational → Major outage\n"
        "Since: 2026-12-01 14:03 UTC\n"
        "Organization: Acme\n\n"
        f"View: {URL}\n\n"
        "-- \nSent by Pulse\n"
    )
    assert mail.html.startswith("<!DOCTYPE html>")
    assert "<style" not in mail.html and "<link" not in mail.html and "<img" not in mail.html
    assert "border-left:4px solid #E01E5A" in mail.html
    assert "<strong>Major outage</strong> since 2026-12-01 14:03 UTC" in mail.html
    assert f'<a href="{URL}"' in mail.html


def test_email_without_url_has_no_button():
    mail = email.render(INCIDENT)
    assert "<a " not in mail.html
    assert "View" not in mail.text
    assert "Status:" not in mail.text and "Component:" not in mail.text
    assert "<strong>Warning</strong> since" in mail.html


def test_email_escapes_html():
    notice = replace(title="<script>alert(1)</script>", summary="a & b\n<b>c</b>", organization='"Acme"')
    mail = email.render(notice)
    assert "<script>" not in mail.html and "<b>" not in mail.html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in mail.html
    assert "a &amp; b<br>&lt;b&gt;c&lt;/b&gt;" in mail.html
    assert "&quot;Acme&quot;" in mail.html
    assert mail.subject == '["Acme"] <script>alert(1)</script>'  # a subject is plain text


def test_email_subject_is_one_line():
    assert (
        email.render(replace(title="Public API:\r\nBcc: x@evil.test")).subject == "[Acme] Public API: Bcc: x@evil.test"
    )


# SMS


def test_sms_text():
    assert sms.text(NOTICE) == (
        "[Acme] Public API: Major outage since 2026-12-01 14:03 UTC. "
        f"3 checks in a row failed: connection refused. {URL}"
    )
    assert sms.text(INCIDENT) == "[Acme] Login failures since 2026-12-01 14:03 UTC. Some users cannot sign in."


def test_sms_cuts_the_summary_first_and_keeps_the_url_whole():
    text = sms.text(replace(summary="word " * 1000))
    assert 1595 <= len(text) <= 1600
    assert text.startswith("[Acme] Public API: Major outage since 2026-12-01 14:03 UTC. word word")
    assert text.endswith(f"… {URL}")


# Push


def test_push_payload():
    assert push.payload(NOTICE) == {
        "title": "Public API: major outage",
        "body": "Major outage since 2026-12-01 14:03 UTC. 3 checks in a row failed: connection refused.",
        "url": URL,
        "tag": "pulse-component.status_changed-Public API",
        "severity": "critical",
        "timestamp": "2026-12-01T14:03:27+00:00",
    }


def test_push_payload_without_component_or_url():
    body = push.payload(INCIDENT)
    assert body["url"] is None
    assert body["tag"] == "pulse-incident.opened-Acme"
    assert body["body"] == "Since 2026-12-01 14:03 UTC. Some users cannot sign in."


def test_push_tag_stays_short_and_stable():
    first, second = push.payload(ABSURD)["tag"], push.payload(ABSURD)["tag"]
    assert first == second and len(first) <= 100
    assert first != push.payload(replace(ABSURD, component=HUGE[1:]))["tag"]


# Every channel, absurd input


def check_slack(notice):
    body = slack.payload(notice)
    blocks = body["blocks"]
    assert len(blocks) <= 50
    assert len(body["text"]) <= 3000
    header, section, context = blocks[:3]
    assert len(header["text"]["text"]) <= 150 and header["text"]["text"].endswith("…")
    assert len(section["text"]["text"]) <= 3000 and "…" in section["text"]["text"]
    assert section["text"]["text"].endswith("*Since:* 2026-12-01 14:03 UTC")
    assert 1 <= len(context["elements"]) <= 10
    assert all(len(element["text"]) <= 3000 for element in context["elements"])
    for block in blocks[3:]:
        (button,) = block["elements"]
        assert len(button["text"]["text"]) <= 75 and len(button["url"]) <= 3000
    assert "<!channel>" not in json.dumps(body)
    return body


def check_discord(notice):
    body = discord.payload(notice)
    (embed,) = body["embeds"]
    assert len(embed["title"]) <= 256 and embed["title"].endswith("…")
    assert len(embed["description"]) <= 4096 and embed["description"].endswith("…")
    assert len(embed["fields"]) <= 25
    assert all(len(field["name"]) <= 256 and 1 <= len(field["value"]) <= 1024 for field in embed["fields"])
    assert len(embed["footer"]["text"]) <= 2048
    texts = [embed["title"], embed["description"], embed["footer"]["text"]]
    texts += [field[key] for field in embed["fields"] for key in ("name", "value")]
    assert sum(map(len, texts)) <= 6000
    assert body["allowed_mentions"] == {"parse": []}
    return body


def check_teams(notice):
    body = teams.payload(notice)
    assert len(json.dumps(body).encode()) <= 27 * 1024
    assert len(json.dumps(body, ensure_ascii=False).encode()) <= 27 * 1024
    title, summary, _ = body["attachments"][0]["content"]["body"]
    assert title["text"].endswith("…") and summary["text"].endswith("…")
    return body


def check_webhook(notice):
    body = webhook.payload(notice, "d-1")
    assert len(body["title"]) <= 1000 and body["title"].endswith("…")
    assert len(body["summary"]) <= 10_000 and body["summary"].endswith("…")
    assert len(body["organization"]["name"]) <= 1000
    assert len(body["component"]["name"]) <= 1000
    return body


def check_email(notice):
    mail = email.render(notice)
    assert len(mail.subject) <= 200 and mail.subject.endswith("…")
    assert "\n" not in mail.subject and "\r" not in mail.subject
    assert "…" in mail.text and len(mail.text) < 20_000
    assert "<script>" not in mail.html and len(mail.html) < 100_000
    return mail


def check_sms(notice):
    text = sms.text(notice)
    assert len(text) <= 1600 and "…" in text
    return text


def check_push(notice):
    body = push.payload(notice)
    assert len(json.dumps(body).encode()) <= 3000
    assert body["title"].endswith("…") and body["body"].endswith("…")
    assert " since 2026-12-01 14:03 UTC. " in body["body"]
    return body


CHECKS = [check_slack, check_discord, check_teams, check_webhook, check_email, check_sms, check_push]


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
@pytest.mark.parametrize("status", ["MAJOR_OUTAGE", HUGE.replace("\n", "_")], ids=["status", "huge-status"])
@pytest.mark.parametrize("url", [URL, "https://e.test/?q=" + "\\" * 990, None], ids=["url", "long-url", "no-url"])
def test_absurd_input_stays_within_every_limit(check, status, url):
    result = check(replace(ABSURD, status=status, previous_status=status[::-1], url=url))
    json.dumps(result if isinstance(result, dict | str) else dataclasses.asdict(result))


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__.removeprefix("check_"))
def test_absurd_input_keeps_a_short_url_whole(check):
    result = check(ABSURD)
    dumped = json.dumps(result if isinstance(result, dict | str) else dataclasses.asdict(result))
    assert URL in dumped


@pytest.mark.parametrize(
    "url", [None, "", "https://e.test/" + "x" * 3000, "javascript:alert(1)"], ids=["none", "empty", "huge", "scheme"]
)
def test_no_usable_url_means_no_link_anywhere(url):
    notice = replace(url=url)
    assert [block["type"] for block in slack.payload(notice)["blocks"]][-1] == "context"
    assert "url" not in discord.payload(notice)["embeds"][0]
    assert "actions" not in teams.payload(notice)["attachments"][0]["content"]
    assert webhook.payload(notice, "d-1")["url"] is None
    assert "<a " not in email.render(notice).html
    assert sms.text(notice).endswith("connection refused.")
    assert push.payload(notice)["url"] is None
