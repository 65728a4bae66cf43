"""Slack's payload: Block Kit blocks and a fallback text, escaped, within Slack's limits."""

import json

from pulse.notifications.channels import slack
from tests.channels import INCIDENT, NOTICE, URL, replace


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
