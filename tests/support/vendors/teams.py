"""The fake Microsoft Teams workflow: ``POST /teams/workflows/{id}/triggers/manual/paths/invoke?…&sig=…``.

Microsoft's documentation: "Create incoming webhooks with Workflows for Microsoft Teams"
(https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook)
and the Adaptive Cards schema (https://adaptivecards.io/explorer/).

It checks the ``sig`` and ``api-version`` of the trigger URL, a body of at most 28 KB holding a ``message`` whose
attachments are Adaptive Cards, answers 202, and throttles each workflow above 4 requests a second.
"""

from __future__ import annotations

import hmac
import re
import secrets
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tests.support.vendors.base import Fake, Received, Reply, Request, json_reply, phrase, whole_seconds

if TYPE_CHECKING:
    from tests.support.vendors.facade import Vendors


_ADAPTIVE = "application/vnd.microsoft.card.adaptive"


class Teams(Fake):
    name = "teams"
    route = re.compile(r"/teams/workflows/([^/]+)/triggers/manual/paths/invoke")
    max_body = 28 * 1024

    def __init__(self, vendors: Vendors) -> None:
        super().__init__(vendors)
        self.workflows: dict[str, str] = {}  # id: sig

    def register(self) -> str:
        workflow, sig = secrets.token_hex(16), secrets.token_urlsafe(32)
        self.workflows[workflow] = sig
        query = urllib.parse.urlencode(
            {"api-version": "2016-06-01", "sp": "/triggers/manual/run", "sv": "1.0", "sig": sig}
        )
        return f"{self.vendors.base_url}/teams/workflows/{workflow}/triggers/manual/paths/invoke?{query}"

    def error(self, status: int, message: str, retry_after: float | None = None) -> Reply:
        return self._error(status, phrase(status).replace(" ", ""), message)

    def _error(self, status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> Reply:
        return json_reply(status, {"error": {"code": code, "message": message}}, headers)

    def handle(self, request: Request, received: Received) -> Reply:
        match = self.route.fullmatch(request.path)
        sig = self.workflows.get(match[1]) if match else None
        given = request.query.get("sig", "")
        if not given:
            message = "The request must be authenticated only by Shared Access scheme."
            return self._error(401, "DirectApiAuthorizationRequired", message)
        if sig is None or not hmac.compare_digest(given, sig):
            return self._error(401, "DirectApiInvalidAuthorizationSignature", "The provided 'sig' is not valid.")
        if "api-version" not in request.query:
            message = "The api-version query parameter (?api-version=) is required for all requests."
            return self._error(400, "MissingApiVersionParameter", message)
        if request.method != "POST":
            message = f"The HTTP method for this request is not valid: expected 'Post' and actual '{request.method}'."
            return self._error(405, "TriggerRequestMethodNotValid", message)
        quota = self.vendors._take(self.name, received.destination)
        if quota is not None and quota.retry_after:
            headers = {"Retry-After": whole_seconds(quota.retry_after)}
            message = "The workflow's trigger is being throttled: more than 4 requests a second."
            return self._error(429, "WorkflowRequestsThrottled", message, headers)
        if len(request.body) > self.max_body:
            message = f"The request content length {len(request.body)} exceeds the limit of {self.max_body} bytes."
            return self._error(413, "MessageTooLarge", message)
        problem = _teams_problem(received.json)
        if problem is not None:
            return self._error(400, "InvalidRequestContent", problem)
        return Reply(202, b"", {"x-ms-workflow-run-id": secrets.token_hex(16)}, accept=True)


def _teams_problem(payload: Any) -> str | None:
    if not isinstance(payload, dict):
        return "The request content must be a JSON object."
    if payload.get("type") != "message":
        return "The 'type' property must be 'message'."
    attachments = payload.get("attachments")
    if not isinstance(attachments, list) or not attachments:
        return "The 'attachments' property must be a non-empty array."
    for attachment in attachments:
        if not isinstance(attachment, dict) or attachment.get("contentType") != _ADAPTIVE:
            return f"Every attachment's contentType must be '{_ADAPTIVE}'."
        content = attachment.get("content")
        if not isinstance(content, dict) or content.get("type") != "AdaptiveCard":
            return "Every attachment's content must be an AdaptiveCard."
        if not isinstance(content.get("body"), list):
            return "The AdaptiveCard must have a 'body' array."
    return None
