"""Errors a user can fix: programs print them as one line, no traceback.

Each stage defines its own subclasses where it raises them (`TokenizerError` in the tokenizer's
file format, `DataSourceError` in `data/sources.py`, `CheckpointError` in `checkpoint.py`, ...);
this module holds only the two every layer raises, and the check every config schema makes.
"""

from collections.abc import Sequence


class UserError(Exception):
    """Base class: bad input, bad configuration or missing data, explained in the message."""


class ConfigError(UserError, ValueError):
    """A configuration value is invalid; the message names the key and the value."""


def check_choice(key: str, value: str, choices: Sequence[str]) -> None:
    """Raise `ConfigError` unless the setting `key` is one of `choices`."""
    if value not in choices:
        raise ConfigError(f"{key}={value!r} must be one of {', '.join(choices)}")
