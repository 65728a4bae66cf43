"""Whom an event's broadcast tells is the event's own (``event.audience``: everyone, the
organization's channels only, or no one when its domain addressed the notifications itself, as
on-call does with pages), and a notification may carry the link its message gives
(``notification.link``: a page's acknowledgement link, written when the page is made)."""

STATEMENTS = [
    """
    ALTER TABLE event ADD COLUMN audience VARCHAR(16) NOT NULL DEFAULT 'everyone'
        CHECK (audience IN ('everyone', 'channels', 'addressed'))
    """,
    # What the broadcast read from the event types until now: pages to no one, on-call's others to channels.
    "UPDATE event SET audience = 'addressed' WHERE type = 'oncall.page'",
    "UPDATE event SET audience = 'channels' WHERE type = 'oncall.exhausted'",
    "ALTER TABLE notification ADD COLUMN link TEXT",
]


def up(migrator, db):
    for statement in STATEMENTS:
        db.execute_sql(statement)


def down(migrator, db):
    db.execute_sql("ALTER TABLE notification DROP COLUMN link")
    db.execute_sql("ALTER TABLE event DROP COLUMN audience")
