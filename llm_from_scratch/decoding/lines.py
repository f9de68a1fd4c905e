"""A text's lines as the translator reads them, and how many it translates at a time: what needs
no model, so that translate.py checks its input before it loads one (and before torch)."""

from __future__ import annotations

import re

from llm_from_scratch.errors import UserError

# Lines `translate_iter` translates at a time: enough for several length-sorted batches of
# similar length, few enough that translations come out steadily.
BATCH_LINES = 256
# The characters of Unicode's categories Cc, Zl and Zp: control characters and line breaks.
_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class InputError(UserError):
    """Text that cannot be translated, e.g. not valid Unicode."""


def split_lines(text: str) -> list[str]:
    """The lines of `text`, a final line break (as a file's lines end) not starting another."""
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def clean(text: str) -> str:
    """Reject text that is not valid Unicode; control characters become spaces."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # lone surrogates, e.g. undecodable bytes in argv
        raise InputError(
            f"input is not valid UTF-8 text (at character {error.start}: "
            f"{text[max(0, error.start - 10) : error.start + 10]!r})"
        ) from None
    return one_line(text).strip()


def one_line(text: str) -> str:
    """Control characters and line separators as spaces: one line in, one line out."""
    return _BREAKING.sub(" ", text)
