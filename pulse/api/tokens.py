"""API tokens: made (`create`, printed once), listed, revoked. A token is ``pulse_`` and 43 letters,
digits, ``-`` or ``_`` (256 random bits from `secrets`); the prefix lets secret scanners find one
that leaked. Only its SHA-256 digest (`pulse.inbound.tokens.digest`) is stored."""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from typing import Any

from pulse.inbound.tokens import digest
from pulse.models import Organization, utcnow
from pulse.models.api_token import SCOPES, ApiToken

PREFIX = "pulse_"
TOKEN = re.compile(r"pulse_[A-Za-z0-9_-]{43}")


def new_token() -> str:
    """A fresh token (a credential: shown once, never logged)."""
    return PREFIX + secrets.token_urlsafe(32)


def create(slug: str, scopes: list[str], *, name: str = "", expires: timedelta | None = None) -> tuple[ApiToken, str]:
    """A new token of organization ``slug``: its row and the token itself. LookupError for an
    unknown organization, ValueError for an unknown scope or none."""
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise ValueError(f"unknown scope {unknown[0]!r} (use {', '.join(SCOPES)})")
    if not scopes:
        raise ValueError("a token needs a scope")
    organization = Organization.get_or_none(Organization.slug == slug)
    if organization is None:
        raise LookupError(f"no organization {slug!r}")
    if expires is not None and expires <= timedelta(0):
        raise ValueError("a token's expiry is a duration after now, above 0")
    token = new_token()
    now = utcnow()
    row = ApiToken.create(
        organization=organization,
        name=name,
        scopes=sorted(set(scopes), key=SCOPES.index),
        token_sha256=digest(token),
        created_at=now,
        expires_at=None if expires is None else now + expires,
    )
    return row, token


def listed(slug: str | None = None) -> list[dict[str, Any]]:
    """Every token (of organization ``slug``), oldest first, as `pulse tokens list` shows them:
    never the token nor its digest."""
    query = ApiToken.select(ApiToken, Organization).join(Organization).order_by(ApiToken.id)
    if slug is not None:
        if not Organization.select().where(Organization.slug == slug).exists():
            raise LookupError(f"no organization {slug!r}")
        query = query.where(Organization.slug == slug)
    return [
        {
            "id": row.id,
            "organization": row.organization.slug,
            "name": row.name,
            "scopes": list(row.scopes),
            "created_at": _iso(row.created_at),
            "expires_at": _iso(row.expires_at),
            "last_used_at": _iso(row.last_used_at),
            "revoked_at": _iso(row.revoked_at),
        }
        for row in query
    ]


def revoke(token_id: int) -> bool:
    """Revoke token ``token_id``: False when it was revoked already. LookupError when there is none."""
    if not ApiToken.select().where(ApiToken.id == token_id).exists():
        raise LookupError(f"no API token {token_id}")
    changed = (
        ApiToken.update(revoked_at=utcnow()).where(ApiToken.id == token_id, ApiToken.revoked_at.is_null()).execute()
    )
    return changed == 1


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
