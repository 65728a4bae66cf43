"""The limits of a request that the application enforces, and the answer to a request outside them.

The headers' size, the time a request takes to arrive and the connections served at once are
bounded by the server (`pulse.inbound.server`, `pulse.inbound.protocol`); the body's size is bounded
here, per route, before the route's code runs.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

_DIGITS = frozenset("0123456789")


class RefusedError(Exception):
    """A request refused before it changed anything. ``reason`` goes to the log line (never a token)
    and to the client.

    Parameters:
      status: the HTTP status answered.
      reason: why, in a few words.
      headers: extra response headers (``Retry-After``).
      body: the JSON answered instead of the reason, for senders that read one.
    """

    def __init__(self, status: int, reason: str, *, headers: dict[str, str] | None = None, body: Any = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = headers or {}
        self.body = body


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request's body, at most ``max_bytes`` bytes: a larger ``Content-Length`` is refused (413)
    before a byte of the body is read, and so is a body that grows past the bound while it streams.
    (h11 has refused a malformed or repeated ``Content-Length`` already.)"""
    length = request.headers.get("content-length")
    if length is not None and set(length) <= _DIGITS and int(length) > max_bytes:
        raise RefusedError(413, f"a body over {max_bytes} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise RefusedError(413, f"a body over {max_bytes} bytes")
    return bytes(body)
