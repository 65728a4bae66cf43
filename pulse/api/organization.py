"""``GET /api/v1/organization``: the token's organization (scope ``read``)."""

from __future__ import annotations

from typing import Any

from pulse.api.auth import Call
from pulse.models import Organization


def show(call: Call) -> dict[str, Any]:
    organization = Organization.get_by_id(call.organization_id)
    return {"slug": organization.slug, "name": organization.name}
