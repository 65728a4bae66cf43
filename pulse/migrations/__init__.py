"""Numbered schema migrations, applied in order by `pulse migrate` (playhouse.migrations)."""
