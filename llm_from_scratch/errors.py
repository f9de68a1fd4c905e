"""Errors a user can fix: programs print them as one line, no traceback.

Each stage defines its own subclasses where it raises them (`TokenizerError` in the tokenizer's
file format, `DataSourceError` in `data/sources.py`, `CheckpointError` in `checkpoint.py`, ...);
this module holds only the two every layer raises.
"""


class UserError(Exception):
    """Base class: bad input, bad configuration or missing data, explained in the message."""


class ConfigError(UserError, ValueError):
    """A configuration value is invalid; the message names the key and the value."""
