"""Check kinds dns, icmp and tls beside http and tcp (`pulse.uptime.kinds`): the CHECK on
``component.kind`` admits them; their fields are in ``target`` like tcp's."""

KINDS = ("http", "tcp", "dns", "icmp", "tls")


def up(migrator, db):
    db.execute_sql("ALTER TABLE component DROP CONSTRAINT component_kind_check")
    names = ", ".join(f"'{name}'" for name in KINDS)
    db.execute_sql(f"ALTER TABLE component ADD CONSTRAINT component_kind_check CHECK (kind IN ({names}))")


def down(migrator, db):
    db.execute_sql("DELETE FROM component WHERE kind NOT IN ('http', 'tcp')")
    db.execute_sql("ALTER TABLE component DROP CONSTRAINT component_kind_check")
    db.execute_sql("ALTER TABLE component ADD CONSTRAINT component_kind_check CHECK (kind IN ('http', 'tcp'))")
