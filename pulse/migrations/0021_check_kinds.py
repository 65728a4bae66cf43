"""Check kinds: an endpoint is checked by its ``kind`` (`pulse.uptime.kinds`), http (every
component so far) or tcp. An http check keeps its url, method, headers, forward_headers and body
columns; another kind's fields are in ``target`` (JSON), which only an http component may lack.
A new kind widens ``component_kind_check``."""

STATEMENTS = [
    "ALTER TABLE component ADD COLUMN kind VARCHAR(16) NOT NULL DEFAULT 'http'"
    " CONSTRAINT component_kind_check CHECK (kind IN ('http', 'tcp'))",
    "ALTER TABLE component ADD COLUMN target JSONB"
    " CONSTRAINT component_target_check CHECK (kind = 'http' OR jsonb_typeof(target) = 'object')",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE component DROP COLUMN target")
    db.execute_sql("ALTER TABLE component DROP COLUMN kind")
