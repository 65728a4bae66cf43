"""Pulse's error types: one root, narrow subclasses.

Actors raise `TransientError` for failures worth retrying (a timeout, a 5xx, a lost connection)
and `PermanentError` for failures that no retry will fix (a 400, a missing row). The retries
middleware retries the first with exponential backoff and dead-letters the second at once.
Exceptions of any other type are treated as transient.
"""


class PulseError(Exception):
    """Base class for every error Pulse raises on purpose."""


class ConfigError(PulseError):
    """A setting or a configuration file is invalid. The text names what is wrong."""


class TransientError(PulseError):
    """A failure that may succeed on a later attempt: retried with backoff."""


class PermanentError(PulseError):
    """A failure that no retry will fix: dead-lettered after the first attempt."""
