"""`pulse tokens create|list|revoke` as an operator runs them: the token printed once and only its
digest kept, the listing never showing it, clear refusals (exit 2) for what cannot be."""

import json
from datetime import timedelta

import pytest

from pulse.api.tokens import TOKEN
from pulse.inbound.tokens import digest
from pulse.models import ApiToken, Organization, utcnow
from tests.support.cli import pulse


@pytest.fixture
def acme(database):
    return Organization.create(slug="acme", name="Acme")


def created(*args: str) -> str:
    done = pulse("tokens", "create", *args)
    assert done.returncode == 0, done.stderr
    [token] = [line for line in done.stdout.splitlines() if not line.startswith("#")]
    return token


def test_a_token_is_printed_once_and_only_its_digest_is_kept(acme):
    token = created("--org", "acme", "--scope", "read", "--scope", "incidents", "--name", "deploy bot")

    assert TOKEN.fullmatch(token)
    [row] = ApiToken.select()
    assert (row.organization_id, row.name, row.scopes, row.expires_at) == (
        acme.id,
        "deploy bot",
        ["read", "incidents"],
        None,
    )
    assert bytes(row.token_sha256) == digest(token)
    stored = " ".join(str(v) for v in ApiToken.select().tuples().get())
    assert token not in stored and token.removeprefix("pulse_") not in stored


def test_expires_is_a_duration_from_now(acme):
    created("--org", "acme", "--scope", "read", "--expires", "90d")

    [row] = ApiToken.select()
    assert abs(row.expires_at - (utcnow() + timedelta(days=90))) < timedelta(minutes=1)


def test_the_listing_shows_each_token_but_never_the_token(acme):
    globex = Organization.create(slug="globex", name="Globex")
    first = created("--org", "acme", "--scope", "read")
    second = created("--org", "globex", "--scope", "write", "--name", "ci")
    ApiToken.update(last_used_at=utcnow()).where(ApiToken.organization == globex).execute()

    listed = pulse("tokens", "list", "--json")
    only_globex = pulse("tokens", "list", "--org", "globex", "--json")
    table = pulse("tokens", "list")

    assert listed.returncode == only_globex.returncode == table.returncode == 0, listed.stderr + table.stderr
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["organization"], r["name"], r["scopes"]) for r in rows] == [
        (1, "acme", "", ["read"]),
        (2, "globex", "ci", ["write"]),
    ]
    assert rows[0]["last_used_at"] is None and rows[1]["last_used_at"] is not None
    assert [r["id"] for r in json.loads(only_globex.stdout)] == [2]
    assert "globex" in table.stdout and "ci" in table.stdout
    for output in (listed.stdout, table.stdout):
        assert first not in output and second not in output


def test_revoke_marks_the_token_revoked_once(acme):
    created("--org", "acme", "--scope", "read")

    revoked = pulse("tokens", "revoke", "1")
    again = pulse("tokens", "revoke", "1")
    unknown = pulse("tokens", "revoke", "7")

    assert (revoked.returncode, revoked.stdout.strip()) == (0, "revoked token 1")
    assert (again.returncode, again.stdout.strip()) == (0, "token 1 was revoked already")
    assert ApiToken.get_by_id(1).revoked_at is not None
    assert (unknown.returncode, unknown.stderr.strip()) == (2, "pulse: no API token 7")


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--org", "nope", "--scope", "read"], "pulse: no organization 'nope'"),
        (["--org", "acme", "--scope", "admin"], "pulse: unknown scope 'admin' (use read, write, incidents, oncall)"),
        (["--org", "acme", "--scope", "read", "--expires", "soon"], "'soon' is not a duration"),
        (["--org", "acme", "--scope", "read", "--expires", "0s"], "a token's expiry is a duration after now"),
        (["--org", "acme"], "Missing option '--scope'"),
    ],
)
def test_what_cannot_be_is_refused_and_makes_nothing(acme, args, said):
    done = pulse("tokens", "create", *args)

    assert done.returncode == 2
    assert said in done.stderr
    assert done.stdout == ""
    assert ApiToken.select().count() == 0


def test_listing_an_unknown_organization_is_refused(acme):
    done = pulse("tokens", "list", "--org", "nope")

    assert (done.returncode, done.stderr.strip()) == (2, "pulse: no organization 'nope'")
