"""The one way out: every outgoing HTTP request (uptime checks, notification deliveries) is a
`Request` made by `fetch`, held to an `AddressPolicy`, answered by a `Response`."""

from pulse.net.bodies import MAX_BODY
from pulse.net.exchange import Request, fetch
from pulse.net.policy import AddressPolicy, AddressRefused
from pulse.net.response import Response

__all__ = ["MAX_BODY", "AddressPolicy", "AddressRefused", "Request", "Response", "fetch"]
