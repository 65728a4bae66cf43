"""Scoped API tokens (`pulse.api`): ``api_token`` holds each token's organization, name, scopes and
SHA-256 digest (``token_sha256``, never the token, which is printed once when it is made: `pulse
tokens create`), when it expires (NULL: never), when it was revoked, and when it was last used (written
at most once a minute)."""

STATEMENTS = [
    """
    CREATE TABLE api_token (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        name VARCHAR(200) NOT NULL DEFAULT '',
        scopes TEXT[] NOT NULL CHECK (
            cardinality(scopes) > 0 AND scopes <@ ARRAY['read', 'write', 'incidents', 'oncall']::TEXT[]
        ),
        token_sha256 BYTEA NOT NULL UNIQUE CHECK (octet_length(token_sha256) = 32),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        expires_at TIMESTAMPTZ NULL,
        revoked_at TIMESTAMPTZ NULL,
        last_used_at TIMESTAMPTZ NULL
    )
    """,
    "CREATE INDEX api_token_organization_id ON api_token (organization_id)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE api_token")
