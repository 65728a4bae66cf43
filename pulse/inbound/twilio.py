"""What Twilio's webhooks need of the service: the check of their ``X-Twilio-Signature``, and the
TwiML they are answered with.

Twilio's documentation: "Webhooks security"
(https://www.twilio.com/docs/usage/webhooks/webhooks-security), as its Python library's
``RequestValidator`` computes it. The signature is HMAC-SHA1, keyed with the account's (primary)
auth token, over:

1. the full URL Twilio requested, as configured there: scheme, host, port, path and query as sent.
   Behind a proxy the service sees another, so the caller builds it from the public address in its
   settings, never from the request's ``Host``;
2. then, for a form POST, each parameter's name in code-point order followed by each of its distinct
   values in order, with no delimiters; blank values count (``ToCity=``), nothing is trimmed;

base64-encoded. Twilio is inconsistent about the port, so a signature over the URL with its default
port (``:443``, ``:80``) and one over it without any port are both accepted, as Twilio's library
does. The comparison takes constant time. The token is a secret: it is never logged nor in a text.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

from starlette.responses import Response

HEADER = "X-Twilio-Signature"
# Twilio's "Webhooks Rules" sign with a key of their own (HMAC-SHA256) and say so in this header.
RULE_HEADER = "X-Twilio-Webhooks-Signature-Settings"
MEDIA_TYPE = "application/xml"  # Twilio reads TwiML as text/xml or application/xml; no type is its error 12300
_NOT_XML = re.compile(r"[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")  # characters XML 1.0 forbids


def signature(auth_token: str, url: str, params: Mapping[str, Sequence[str]]) -> str:
    """Twilio's signature of a request to ``url`` with the form ``params`` (each name's values)."""
    signed = url + "".join(name + value for name in sorted(params) for value in sorted(set(params[name])))
    return base64.b64encode(hmac.new(auth_token.encode(), signed.encode(), hashlib.sha1).digest()).decode()


def valid(auth_token: str, url: str, params: Mapping[str, Sequence[str]], given: str) -> bool:
    """Whether ``given`` (the header's value) is Twilio's signature of the request, over ``url``
    with its default port or without any."""
    expected = [signature(auth_token, candidate, params).encode() for candidate in (with_port(url), without_port(url))]
    given_bytes = given.encode("utf-8", "replace")
    matched = [hmac.compare_digest(one, given_bytes) for one in expected]  # both compared, always
    return any(matched)


def with_port(url: str) -> str:
    """``url`` with its port, the scheme's default (443 or 80) when it gives none."""
    parts = urlsplit(url)
    if parts.port is not None:
        return url
    return parts._replace(netloc=f"{parts.netloc}:{443 if parts.scheme == 'https' else 80}").geturl()


def without_port(url: str) -> str:
    """``url`` without any port."""
    parts = urlsplit(url)
    if parts.port is None:
        return url
    return parts._replace(netloc=parts.netloc.rsplit(":", 1)[0]).geturl()


def twiml(message: str | None) -> Response:
    """The answer to a messaging webhook: a reply of ``message`` (plain text), or none (None)."""
    if message is None:
        body = "<Response/>"
    else:
        body = f"<Response><Message>{escape(_NOT_XML.sub('', message))}</Message></Response>"
    return Response(
        f'<?xml version="1.0" encoding="UTF-8"?>{body}', media_type=MEDIA_TYPE, headers={"Cache-Control": "no-store"}
    )
