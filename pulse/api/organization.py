"""``GET /api/v1/organization``: the token's organization (scope ``read``)."""

from __future__ import annotations

from typing_extensions import TypedDict

from pulse.api.auth import Call
from pulse.api.declared import Operation
from pulse.models import Organization


class OrganizationView(TypedDict):
    slug: str
    name: str


def show(call: Call) -> OrganizationView:
    organization = Organization.get_by_id(call.organization_id)
    return {"slug": organization.slug, "name": organization.name}


SHOW = Operation("The token's organization", OrganizationView, example={"slug": "acme", "name": "Acme Inc."})
