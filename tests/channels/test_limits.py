"""Every channel with absurd input: within its vendor's limits, a short URL kept whole, no link when unusable."""

import dataclasses
import json

import pytest

from pulse.notifications.channels import discord, email, push, slack, sms, teams, webhook
from tests.channels import ABSURD, HUGE, URL, replace


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
