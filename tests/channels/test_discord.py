"""Discord's payload: one embed that never pings and escapes markdown."""

from pulse.notifications.channels import discord
from pulse.notifications.channels.notice import CRITICAL, WARNING
from pulse.notifications.channels.text import COLORS
from tests.channels import INCIDENT, NOTICE, URL, replace


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
