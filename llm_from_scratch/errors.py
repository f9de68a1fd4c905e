"""Errors a user can fix: command-line entry points print them as one line, no traceback."""


class UserError(Exception):
    """Base class: bad input, bad configuration or missing data, explained in the message."""


class ConfigError(UserError, ValueError):
    """A configuration value is invalid; the message names the key and the value."""


class DataSourceError(UserError):
    """A dataset file cannot be fetched, copied or verified."""
