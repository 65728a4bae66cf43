"""The SMS text: one line within Twilio's 1,600 characters, the URL kept whole."""

from pulse.notifications.channels import sms
from tests.channels import INCIDENT, NOTICE, URL, replace


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
