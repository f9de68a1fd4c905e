"""A text's lines as the translator reads them, and how many it translates at a time: what needs
no model, so that translate.py checks its input before it loads one (and before torch)."""

from __future__ import annotations

import re
import unicodedata

from llm_from_scratch.data.placeholders import without_reserved
from llm_from_scratch.errors import UserError
from llm_from_scratch.text_input import without_bom

# Lines `translate_iter` translates at a time: enough for several length-sorted batches of
# similar length, few enough that translations come out steadily.
BATCH_LINES = 256
# The longest line translate.py takes by default (--max-chars): a line's sentences are decoded
# together, so time and memory grow with it, with nothing to show until it is done. Ten pages
# of prose fit; a file without line breaks does not.
MAX_CHARS = 10_000
# The scripts (the first word of a letter's Unicode name) each language is written in.
SCRIPTS = {"en": ("LATIN",), "ja": ("HIRAGANA", "KATAKANA", "CJK")}
LANGUAGE_NAMES = {"en": "English", "ja": "Japanese"}
# What a text without a letter to translate (spaces, line breaks, control characters, a BOM)
# gets: an empty translation, which keeps a file's lines aligned, and this said beside it.
NOTHING_TO_TRANSLATE = "nothing to translate, only spaces and line breaks: the translation is empty"
# Letters looked at to tell a line's language: enough for a verdict, never a long line's cost.
SAMPLE_LETTERS = 400
# The characters of Unicode's categories Cc, Zl and Zp: control characters and line breaks.
_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class InputError(UserError):
    """Text that cannot be translated, e.g. not valid Unicode."""


def split_lines(text: str) -> list[str]:
    """The lines of `text`, a final line break (as a file's lines end) not starting another."""
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def clean(text: str) -> str:
    """Reject text that is not valid Unicode; control characters become spaces, a leading
    byte-order mark goes (`text_input.without_bom`), and so do the characters the model reads
    as placeholders or tags (`placeholders.without_reserved`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:  # lone surrogates, e.g. undecodable bytes in argv
        raise InputError(
            f"input is not valid UTF-8 text (at character {error.start}: "
            f"{text[max(0, error.start - 10) : error.start + 10]!r})"
        ) from None
    return without_reserved(without_bom(one_line(text).strip())).strip()


def one_line(text: str) -> str:
    """Control characters and line separators as spaces: one line in, one line out."""
    return _BREAKING.sub(" ", text)


def check_length(lines: list[str], origin: str, max_chars: int) -> None:
    """Refuse, in one line naming it, the first of `lines` longer than `max_chars` characters."""
    for number, line in enumerate(lines, start=1):
        if len(line) > max_chars:
            raise InputError(
                f"{origin}: line {number} has {len(line):,} characters, more than --max-chars "
                f"{max_chars:,}: break it into lines (at sentence ends), or raise --max-chars"
            )


def mostly_in(text: str, language: str) -> bool:
    """Whether most of the letters of `text` are in `language`'s script (English: Latin;
    Japanese: kana and kanji); False for a language this does not know, or no letters."""
    scripts = SCRIPTS.get(language)
    letters = [char for char in text[: SAMPLE_LETTERS * 4] if char.isalpha()][:SAMPLE_LETTERS]
    if scripts is None or not letters:
        return False
    inside = sum(unicodedata.name(char, "").startswith(scripts) for char in letters)
    return inside * 2 > len(letters)


def has_text(text: str) -> bool:
    """Whether `text` holds anything to translate: more than spaces, line breaks, control
    characters and byte-order marks (what `clean` leaves of each line)."""
    return any(clean(line) for line in split_lines(text))


def language_name(code: str) -> str:
    """`en` → English; a code this does not know as itself."""
    return LANGUAGE_NAMES.get(code, code)


def in_written_language(text: str, source_lang: str, target_lang: str) -> str | None:
    """Where `text` is mostly in `target_lang` (Japanese given to an English→Japanese model),
    what a user is told, the CLI and the API alike: `mostly Japanese, the language this model
    writes; it reads English` (it is translated all the same); None otherwise."""
    if not mostly_in(text, target_lang):
        return None
    return (
        f"mostly {language_name(target_lang)}, the language this model writes; it reads "
        f"{language_name(source_lang)}"
    )
