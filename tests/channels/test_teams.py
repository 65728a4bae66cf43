"""Teams' payload: a message with one Adaptive Card."""

import pytest

from pulse.notifications.channels import teams
from pulse.notifications.channels.notice import CRITICAL, INFO, RESOLVED, WARNING
from tests.channels import INCIDENT, NOTICE, URL, replace


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
