"""The audit of the API's writes: `record` writes a row per write (`pulse.api.writes`, and `pulse
components release` with no token); ``GET /api/v1/audit`` (scope ``read``) lists the token's
organization's rows, newest first, a page at a time (`pulse.api.pages`)."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict

from pulse.api import pages
from pulse.api.auth import Call
from pulse.api.declared import Operation
from pulse.inbound.jsonbody import storable
from pulse.models import ApiAudit


def record(
    organization_id: int,
    token_id: int | None,
    action: str,
    object_type: str,
    object_key: str,
    status: int,
    at: datetime,
) -> None:
    """One write: which token (None: the command line) did ``action`` (create, replace, patch,
    delete, release) to which object, when, answered ``status``."""
    ApiAudit.insert(
        organization=organization_id,
        token=token_id,
        action=action,
        object_type=object_type,
        object_key=storable(object_key[:200])[0],  # a key the path gave may hold a NUL
        status=status,
        at=at,
    ).execute()


class AuditRow(TypedDict):
    id: int
    at: str
    token_id: int | None
    action: str
    object_type: str
    object_key: str
    status: int


class AuditPage(TypedDict):
    audit: list[AuditRow]
    next_cursor: str | None


def index(call: Call) -> AuditPage:
    limit = pages.limit(call.query)
    query = ApiAudit.select().where(ApiAudit.organization == call.organization_id)
    before = pages.after_number(call.query)
    if before is not None:
        query = query.where(ApiAudit.id < before)
    rows, next_cursor = pages.take(query, ApiAudit.id.desc(), limit, "id")
    return {"audit": [shown(r) for r in rows], "next_cursor": next_cursor}


def shown(row: ApiAudit) -> AuditRow:
    return {
        "id": row.id,
        "at": row.at.isoformat(),
        "token_id": row.token_id,
        "action": row.action,
        "object_type": row.object_type,
        "object_key": row.object_key,
        "status": row.status,
    }


INDEX = Operation(
    "The audit of the API's writes, newest first",
    AuditPage,
    query=pages.QUERY,
    refusals=(400,),
    example={
        "audit": [
            {
                "id": 7,
                "at": "2026-12-07T18:20:11.204000+00:00",
                "token_id": 3,
                "action": "patch",
                "object_type": "component",
                "object_key": "api",
                "status": 200,
            }
        ],
        "next_cursor": "Nw",
    },
)
