"""The API's writes (`pulse.api.writes`): ``api_idempotency`` keeps, per token and
``Idempotency-Key``, the digest of the request that used it and the answer it got, so a retry is
answered the same and writes nothing (a key is honoured for 24 hours); ``api_audit`` keeps a row per
write: the token (NULL for the command line), the action, the object's type and key, when, and the
status answered."""

STATEMENTS = [
    """
    CREATE TABLE api_idempotency (
        token_id BIGINT NOT NULL REFERENCES api_token (id) ON DELETE CASCADE,
        key TEXT NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
        request_sha256 BYTEA NOT NULL CHECK (octet_length(request_sha256) = 32),
        status SMALLINT NULL,
        headers JSON NULL,
        body JSON NULL,  -- as answered, its fields in their order
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        PRIMARY KEY (token_id, key)
    )
    """,
    """
    CREATE TABLE api_audit (
        id BIGSERIAL PRIMARY KEY,
        organization_id BIGINT NOT NULL REFERENCES organization (id) ON DELETE CASCADE,
        token_id BIGINT NULL REFERENCES api_token (id) ON DELETE SET NULL,
        action TEXT NOT NULL,
        object_type TEXT NOT NULL,
        object_key TEXT NOT NULL,
        status SMALLINT NOT NULL,
        at TIMESTAMPTZ NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX api_audit_organization_id ON api_audit (organization_id, id)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE api_audit, api_idempotency")
