"""Errors a user can fix: programs print them as one line, no traceback.

Each stage defines its own subclasses where it raises them (`TokenizerError` in the tokenizer's
file format, `DataSourceError` in `data/sources.py`, `CheckpointError` in `checkpoint.py`, ...);
this module holds only the two every layer raises, and the checks every config schema makes.
"""

from collections.abc import Sequence

Number = int | float


class UserError(Exception):
    """Base class: bad input, bad configuration or missing data, explained in the message."""


class ConfigError(UserError, ValueError):
    """A configuration value is invalid; the message names the key and the value."""


def check_choice(key: str, value: str, choices: Sequence[str]) -> None:
    """Raise `ConfigError` unless the setting `key` is one of `choices`."""
    if value not in choices:
        raise ConfigError(f"{key}={value!r} must be one of {', '.join(choices)}")


def check_range(
    key: str,
    value: Number | None,
    low: Number | None = None,
    high: Number | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> None:
    """Raise `ConfigError` unless the setting `key` lies between `low` and `high` (None: no
    bound; `low_open`/`high_open`: the bound itself is out). A None value (unset) passes."""
    if value is None:
        return
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        raise ConfigError(f"{key}={value} must be {_range_text(low, high, low_open, high_open)}")


def _range_text(low: Number | None, high: Number | None, low_open: bool, high_open: bool) -> str:
    if high is None:
        if low == 0:
            return "positive" if low_open else "at least 0"
        return f"greater than {low}" if low_open else f"at least {low}"
    if low is None:
        return f"less than {high}" if high_open else f"at most {high}"
    return f"in {'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
