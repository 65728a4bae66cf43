"""The ``http`` kind (the default): request the component's URL through `pulse.net.fetch` and
judge the answer by its conditions.

    - key: api
      name: Public API
      url: https://api.acme.example/health
      method: GET                      # optional, and the next three
      headers: {Authorization: "Bearer ${API_TOKEN}"}
      body: null
      forward_headers: false
      ca_file: /etc/pulse/acme-ca.pem  # optional, for https: a CA of its own, or ca: its PEM (`pulse.uptime.kinds.ca`)
      conditions: ["[STATUS] == 200", "[BODY].status == UP"]

Its target lives in the component's url, method, headers, forward_headers and body columns, and
its CA, if it has one, in the ``target`` column; the CA verifies every https hop of its redirects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from pulse.models import utcnow
from pulse.net import AddressPolicy, Request, fetch
from pulse.spec import header, http_url
from pulse.uptime.check import CheckResult, judge
from pulse.uptime.kinds import ca
from pulse.uptime.kinds.kind import CLEARED, Kind, Stored

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
DEFAULT_CONDITIONS = ("[STATUS] < 400",)
PLACEHOLDERS = frozenset({"[STATUS]", "[RESPONSE_TIME]", "[BODY]", "[CONNECTED]", "[IP]", "[CERTIFICATE_EXPIRATION]"})
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")


class Fields(ca.Fields):
    """An http check's fields in the configuration file."""

    url: str | None = Field(None, max_length=2048)
    method: str = "GET"
    headers: dict[str, str] = Field(default_factory=dict, max_length=50)
    forward_headers: bool = False
    body: str | None = Field(None, max_length=65536)

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        if value.upper() not in METHODS:
            raise ValueError(f"{value!r} is not one of {', '.join(METHODS)}")
        return value.upper()

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        return value if value is None else http_url(value)

    @field_validator("headers")
    @classmethod
    def _headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
            if "\r" in text or "\n" in text or len(text) > 8192:
                raise ValueError(f"the value of {name} has a line break or is over 8192 characters")
            header(name, text)
        return value


def problems(spec: Fields) -> list[str]:
    found = [] if spec.url else ["an endpoint needs a url"]
    named = ca.given(spec)
    if named and spec.url and urlsplit(spec.url).scheme != "https":
        found.append(f"{named} goes with an https:// url")
    return found + ca.problems(spec)


def stored(spec: Fields) -> dict[str, Any]:
    return CLEARED | {
        "url": spec.url,
        "method": spec.method,
        "headers": spec.headers,
        "forward_headers": spec.forward_headers,
        "body": spec.body,
        "target": {"ca": spec.trusted} if spec.trusted else None,
    }


def target(row: Stored) -> Request:
    verify = (row.target or {}).get("ca") or True
    return Request(row.method, row.url or "", row.headers, row.body, row.timeout_s, row.forward_headers, verify=verify)


def run(
    request: Request, condition_texts: Sequence[str], extract: dict[str, str], policy: AddressPolicy
) -> CheckResult:
    """Make the request and evaluate the conditions (and extractions) on what came back."""
    started_at = utcnow()
    response, error = fetch(request, policy)
    return judge(started_at, response, error, condition_texts or DEFAULT_CONDITIONS, extract)


def command_line(url: str, options: Mapping[str, Any]) -> Request:
    trusted = options.get("ca")
    if trusted and urlsplit(url).scheme != "https":
        raise ValueError("--ca-file goes with an https:// URL")
    headers, timeout_s = dict(options["headers"]), options["timeout_s"]
    return Request(options["method"].upper(), url, headers, timeout_s=timeout_s, verify=trusted or True)


KIND = Kind(
    name="http",
    fields=Fields,
    placeholders=PLACEHOLDERS,
    default_conditions=DEFAULT_CONDITIONS,
    problems=problems,
    stored=stored,
    target=target,
    run=run,
    flag="url",
    command_line=command_line,
)
