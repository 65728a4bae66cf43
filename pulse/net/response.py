"""What one HTTP exchange observed: the seam between fetching and whoever reads the answer."""

from __future__ import annotations

import dataclasses
from datetime import datetime


@dataclasses.dataclass(frozen=True)
class Response:
    """What a request observed.

    Parameters:
      status: the HTTP status code; None when there was no HTTP response.
      body: at most `pulse.net.bodies.MAX_BODY` bytes, decoded per Content-Encoding.
      response_time_ms: milliseconds from just before the request to the end of the body read.
      connected: a connection was made.
      ip: the address connected to, when known.
      certificate_expiration_ms: milliseconds until the TLS certificate expires; None for plain HTTP.
      dns_rcode: a DNS reply's response code as text (NOERROR, NXDOMAIN…); None when no DNS reply.
      certificate_valid: the certificate's chain and name verified, for the checks that read the
        certificate apart from verifying it (the tls kind); None for the others.
      certificate_problem: why the certificate did not verify (OpenSSL's reason), or None.
      packet_loss: ICMP echo requests without a reply, in percent (0 to 100); None for other checks.
      certificate_not_after: when the TLS certificate expires (its notAfter, UTC), which tells one
        certificate from its renewal; None when ``certificate_expiration_ms`` is.
      headers: the final response's headers, names in lower case.
      memo: forms of the body computed once per response by whoever reads it (its text, its JSON).
    """

    status: int | None = None
    body: bytes = b""
    response_time_ms: float = 0.0
    connected: bool = False
    ip: str | None = None
    certificate_expiration_ms: float | None = None
    dns_rcode: str | None = None
    certificate_valid: bool | None = None
    certificate_problem: str | None = None
    packet_loss: float | None = None
    certificate_not_after: datetime | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict, compare=False)
    memo: dict[str, object] = dataclasses.field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The body decoded as UTF-8 (invalid bytes replaced), decoded once."""
        text = self.memo.get("text")
        if text is None:
            text = self.memo["text"] = self.body.decode("utf-8", errors="replace")
        return str(text)
