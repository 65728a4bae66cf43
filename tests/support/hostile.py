"""What a hostile vendor, proxy or gateway may answer, for a fake's `forge`
(`tests.support.jsonapi`): text that repeats the request's credentials, and bodies and headers
that no API sends."""

from __future__ import annotations

import base64
import binascii
import re

CREDENTIAL = re.compile(r"auth|key|token", re.IGNORECASE)
PADDING = 900_000  # characters after what a gateway repeats: a reply far past any bound
DEEP = b"[" * 100_000 + b"]" * 100_000  # JSON nested 100,000 levels deep
BIG = 10**400  # a JSON integer of 401 digits, past the largest float
HUGE = 1.7e308  # two of them add up past the largest float
ENDLESS = "Remaining: 0 Time until reset: " + "9" * 400  # a Pingdom Req-Limit header


def credentials(headers: dict[str, str]) -> list[str]:
    """Every form of a request's credentials a reply could repeat: each credential header's value,
    its credentials without the scheme, and a Basic pair decoded, with its password."""
    found = []
    for name, value in headers.items():
        if not CREDENTIAL.search(name):
            continue
        scheme, _, rest = value.partition(" ")
        found += [value, rest or scheme]
        if scheme.lower() == "basic":
            try:
                pair = base64.b64decode(rest).decode()
            except (binascii.Error, UnicodeDecodeError):
                continue
            found += [pair, pair.partition(":")[2]]
    return [form for form in found if form]


def echo(headers: dict[str, str]) -> str:
    """What a gateway that repeats the request says: every form of its credentials, then `PADDING`
    characters more."""
    return "upstream refused the request with " + " and ".join(credentials(headers)) + " " + "x" * PADDING
