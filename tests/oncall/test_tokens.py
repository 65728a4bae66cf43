"""Acknowledgement tokens: a token acknowledges one alert for one person until it expires, and
nothing else; a refusal says why without repeating the token."""

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from pulse.oncall.tokens import LIFETIME, InvalidTokenError, link, sign, verify

SECRET = "k" * 32
NOW = datetime(2026, 12, 2, 3, 0, tzinfo=UTC)
TOKEN = sign(12, "alice", NOW + timedelta(hours=1), SECRET)


def test_a_token_acknowledges_its_alert_for_its_person_until_it_expires():
    assert verify(TOKEN, SECRET, NOW) == (12, "alice")
    assert verify(TOKEN, SECRET, NOW + timedelta(minutes=59, seconds=59)) == (12, "alice")
    with pytest.raises(InvalidTokenError, match="expired"):
        verify(TOKEN, SECRET, NOW + timedelta(hours=1))


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (TOKEN.replace("12.", "13.", 1), "signature does not match"),  # another alert
        (TOKEN.replace(".alice.", ".bob.", 1), "signature does not match"),  # another person
        (TOKEN.replace(str(int((NOW + timedelta(hours=1)).timestamp())), "9999999999"), "signature does not match"),
        (sign(12, "alice", NOW + timedelta(hours=1), "o" * 32), "signature does not match"),  # another key
        (TOKEN[:-1] + ("A" if TOKEN[-1] != "A" else "B"), "signature does not match"),
        (TOKEN[:-2], "incomplete or malformed"),
        ("", "incomplete or malformed"),
        ("12.alice.1.x", "incomplete or malformed"),
        (TOKEN + "\n", "incomplete or malformed"),
    ],
)
def test_a_token_for_anything_else_is_refused_without_repeating_it(token, reason):
    with pytest.raises(InvalidTokenError, match=reason) as refused:
        verify(token, SECRET, NOW)
    assert not token or token.strip() not in str(refused.value)


def test_a_link_carries_the_token_for_a_day():
    url = link("https://status.acme.example/ack", 7, "carol-b", NOW, SECRET)
    assert url.startswith("https://status.acme.example/ack?t=7.carol-b.")
    [token] = parse_qs(urlsplit(url).query)["t"]
    assert verify(token, SECRET, NOW + LIFETIME - timedelta(seconds=1)) == (7, "carol-b")
    with pytest.raises(InvalidTokenError):
        verify(token, SECRET, NOW + LIFETIME)
    assert link("https://x.example/a?org=1", 7, "carol-b", NOW, SECRET).startswith("https://x.example/a?org=1&t=7.")
