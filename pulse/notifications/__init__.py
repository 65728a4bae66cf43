"""Notifications: events told to the people and systems that asked. `spec` declares channels and
subscribers in the configuration file, `delivery` fans an event out to one row per destination and
delivers each once, `render` says what happened, `channels/` formats and sends it per provider."""
