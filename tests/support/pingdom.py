"""A local fake of the Pingdom API 3.1's check details, as strict as the real one.

Pingdom's documentation: "Pingdom API 3.1" (https://docs.pingdom.com/api/): ``GET /checks/{checkid}``,
its errors and its request limits.

    with Pingdom() as pingdom:
        pingdom.checks[5811286] = {"status": "up", "lastresponsetime": 58}
        ...query through Pulse with url=pingdom.url, bearer_token=pingdom.token, query "5811286"...

``GET /api/3.1/checks/{id}`` needs ``Authorization: Bearer`` with the token (401 otherwise); a
check it does not know is a 403 ``Forbidden`` (Pingdom does not say whether a check exists to
an account that does not own it). Errors are ``{"error": {"statuscode", "statusdesc",
"errormessage"}}``. Every answer carries ``Req-Limit-Short`` and ``Req-Limit-Long``; a request
past either limit is a 429. Every request is kept in `requests`.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import Any

from tests.support.jsonapi import JsonApi

_CHECK = re.compile(r"/api/3\.1/checks/(\d+)")


class Pingdom(JsonApi):
    def __init__(self, *, short: int = 1000, long: int = 100_000) -> None:
        self.token = secrets.token_urlsafe(48)
        self.checks: dict[int, dict[str, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        self.remaining = {"short": short, "long": long}
        self.resets = {"short": 3600, "long": 2_592_000}
        super().__init__()
        self.url = self.url + "/api/3.1"

    def answer(
        self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            self.requests.append({"method": method, "path": path, "headers": headers})
            over = min(self.remaining.values()) <= 0
            if not over:
                self.remaining = {name: left - 1 for name, left in self.remaining.items()}
            limits = {
                f"Req-Limit-{name.capitalize()}": f"Remaining: {max(left, 0)} Time until reset: {self.resets[name]}"
                for name, left in self.remaining.items()
            }
        found = _CHECK.fullmatch(path)
        if method != "GET" or not found:
            return 404, _error(404, "Not Found", "Resource not found"), limits
        if headers.get("authorization") != f"Bearer {self.token}":
            return 401, _error(401, "Unauthorized", "Invalid token"), limits
        if over:
            return 429, _error(429, "Too Many Requests", "Request limit exceeded, try again later"), limits
        check = self.checks.get(int(found[1]))
        if check is None:
            return (
                403,
                _error(403, "Forbidden", "Something went wrong! This user does not have access to this check."),
                limits,
            )
        now = int(time.time())
        detail = {
            "id": int(found[1]),
            "name": f"check {found[1]}",
            "hostname": "www.acme.example",
            "resolution": 1,
            "type": {"http": {"url": "/", "encryption": True, "port": 443}},
            "created": now - 86_400,
            "lasttesttime": now - 30,
            "lasterrortime": now - 3_600,
            **check,
        }
        return 200, {"check": detail}, limits


def _error(status: int, description: str, message: str) -> dict[str, Any]:
    return {"error": {"statuscode": status, "statusdesc": description, "errormessage": message}}
