"""The numbers a text writes in digits: where they are, and one canonical form to compare them.

The one notion of a number for the metric (`evaluation/fidelity.py`: does an output keep its
source's numbers?), for the repair (`decoding/number_repair.py`: put back those it lost) and for
the placeholders a model can be trained with (`data/placeholders.py`). A number is digits with
optional thousands groups and an optional decimal part, in ASCII or full-width form: `1,200`,
`1200` and `１，２００` are one number. A phone number, three or more groups of digits joined by
hyphens or dashes (`03-1234-5678`, `０１２０―００―００００`), is one number too, kept only if
kept whole; a date written `2024-05-01` is three (its Japanese is 2024年5月1日). Text is read
NFKC-normalized (full-width ０-９ and ，． become ASCII), character by character so that each
number keeps its place in the text as given. Numbers written in kanji (三時, 千二百円) are not
numbers here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# A phone number: 3+ digit groups joined by hyphens or dashes (Japanese text writes ―, ‐ or even
# the long-vowel mark ー between them), not a year-month-day date.
_DASH = "-‐‑–—―ー"
_DATE = rf"\d{{4}}[{_DASH}]\d{{1,2}}[{_DASH}]\d{{1,2}}(?![{_DASH}]?\d)"
_PHONE = rf"(?!{_DATE})\d+(?:[{_DASH}]\d+){{2,}}"
# Otherwise digits with optional thousands groups, then an optional decimal part. A comma not
# followed by exactly three digits ("In 1995, 20 people") or a period ending a sentence is not
# part of it.
_NUMBER = re.compile(
    rf"(?<![\d.])(?:(?P<phone>{_PHONE})|(?P<whole>\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.(?P<fraction>\d+))?)"
)
_DASHES = str.maketrans(dict.fromkeys(_DASH, "-"))
# A unit or counter written right after a number in Japanese (歳, 円, 人, 時, ％, キロ, メートル).
_UNIT = re.compile("[々〇\u4e00-\u9fff\u30a1-\u30fa%％][\u4e00-\u9fff\u30a1-\u30fcー]*")
# A number's digits and a phone number's hyphens as Japanese text writes them; the separators
# `,` and `.` are left to the caller, which may copy the ones a text already uses.
FULL_WIDTH_DIGITS = str.maketrans("0123456789-", "０１２３４５６７８９－")
# How a Japanese text writes its numbers' digits: `１，２００` or `1,200`.
DIGIT_FORMS = ("full_width", "ascii")


@dataclass(frozen=True)
class Number:
    """A number as a text writes it."""

    start: int  # where it is in the text as given: text[start:end]
    end: int
    value: str  # canonical: ASCII, no thousands separators or leading zeros (`05` is `5`); a
    # phone number's digits as written, its groups joined by `-`
    grouped: bool  # written with thousands separators

    @property
    def is_phone(self) -> bool:
        """Whether it is a phone number, which takes no unit (no ０３－１２３４－５６７８歳)."""
        return "-" in self.value


def unit_end(text: str, end: int) -> int:
    """Where the unit or counter that `text` writes right after a number ending at `end` ends:
    `end` itself when there is none."""
    unit = _UNIT.match(text, end)
    return unit.end() if unit else end


def find_numbers(text: str) -> list[Number]:
    """The numbers written in digits in `text`, in order."""
    normalized, origins = _normalized_with_origins(text)
    found = []
    for match in _NUMBER.finditer(normalized):
        start, end = origins[match.start()], origins[match.end() - 1] + 1
        if phone := match["phone"]:
            found.append(Number(start, end, phone.translate(_DASHES), grouped=False))
            continue
        whole, fraction = match["whole"], match["fraction"]
        value = (whole.replace(",", "").lstrip("0") or "0") + (f".{fraction}" if fraction else "")
        found.append(Number(start, end, value, grouped="," in whole))
    return found


def numbers(text: str) -> list[str]:
    """The canonical values of `text`'s numbers, in order (a decimal keeps its fractional digits:
    `3.50` stays `3.50`)."""
    return [number.value for number in find_numbers(text)]


def _normalized_with_origins(text: str) -> tuple[str, list[int]]:
    """`text` NFKC-normalized one character at a time, and for each character of the result the
    position of the character of `text` it comes from. (Whole-text NFKC would also compose
    letters with combining marks, which moves positions and never touches a digit.)"""
    if unicodedata.is_normalized("NFKC", text):
        return text, list(range(len(text)))
    pieces, origins = [], []
    for position, char in enumerate(text):
        piece = unicodedata.normalize("NFKC", char)
        pieces.append(piece)
        origins += [position] * len(piece)
    return "".join(pieces), origins
