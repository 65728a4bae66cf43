"""Reply codes: an SMS page asks for a reply with a short code, and a reply with it from the number
the page went to acknowledges the alert for the person paged (`pulse.oncall.replies`). The page's
notification carries its code (what its message says, as it carries its link);
``oncall_reply_code`` maps a number and a code back to the alert and the person, and records the
reply that used it (Twilio's MessageSid, unique: a message retried is taken once)."""

STATEMENTS = [
    "ALTER TABLE notification ADD COLUMN reply_code VARCHAR(8)",
    """
    CREATE TABLE oncall_reply_code (
        id BIGSERIAL PRIMARY KEY,
        notification_id BIGINT NOT NULL UNIQUE REFERENCES notification (id) ON DELETE CASCADE,
        alert_id BIGINT NOT NULL REFERENCES oncall_alert (id) ON DELETE CASCADE,
        person_id BIGINT NOT NULL REFERENCES person (id) ON DELETE CASCADE,
        phone VARCHAR(16) NOT NULL,
        code VARCHAR(8) NOT NULL CHECK (code ~ '^[0-9]+$'),
        created_at TIMESTAMPTZ NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL,
        used_at TIMESTAMPTZ,
        message_sid VARCHAR(64) UNIQUE,
        answer TEXT,
        CHECK ((used_at IS NULL) = (message_sid IS NULL))
    )
    """,
    "CREATE INDEX oncall_reply_code_phone ON oncall_reply_code (phone, code)",
    "CREATE INDEX oncall_reply_code_alert ON oncall_reply_code (alert_id)",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("DROP TABLE oncall_reply_code")
    db.execute_sql("ALTER TABLE notification DROP COLUMN reply_code")
