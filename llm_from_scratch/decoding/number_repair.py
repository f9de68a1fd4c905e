"""Number repair: a translation's numbers copied from its source where the model changed them.

A small model often writes a number other than the source's (1995 → １９５９, 1,200 yen →
２万円). After decoding, the source sentence's numbers that its translation lacks (numbers as
`llm_from_scratch/numbers.py` finds and compares them, the fidelity metric's notion) replace the
translation's numbers that its source lacks, in order, when there are as many of each. Otherwise
the translation is left as it is: the repair never adds or drops a number, and never guesses
which of several a count mismatch leaves out. Nor does it touch a translation when a missing
number is scaled by a word ("2 million"): its Japanese (200万) is not the same digits.

A replacement is written like the number it replaces: full-width digits where that number's are,
its thousands separator and decimal point; a number too short to show whether it would be
grouped is grouped as the source's is. A kanji unit after the replaced digits goes with them
(２万円 → １，２００円), since the digits now say the whole amount; so does any unit after digits
replaced by a phone number, which takes none (２５歳 → ０９０－１２３４－５６７８): the repair
never writes a unit after a number that its source does not give one.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from llm_from_scratch.numbers import FULL_WIDTH_DIGITS, Number, find_numbers, unit_end

_KANJI_UNITS = re.compile(r"[十百千万億兆]+")
_SCALE_WORD = re.compile(r"\s*(?:thousand|million|billion|trillion)\b", re.IGNORECASE)


def repair_numbers(source: str, translation: str) -> str:
    """`translation` with the numbers it changed set back to `source`'s (see the module
    docstring); `translation` itself when there is nothing to repair or no safe repair."""
    wanted, written = find_numbers(source), find_numbers(translation)
    missing = _unmatched(wanted, written)
    extra = _unmatched(written, wanted)
    if not missing or len(missing) != len(extra):
        return translation
    if any(_SCALE_WORD.match(source, number.end) for number in missing):
        return translation
    parts, position = [], 0
    for number, replaced in zip(missing, extra, strict=True):
        units = _KANJI_UNITS.match(translation, replaced.end)
        parts += [
            translation[position : replaced.start],
            _written_like(number, translation[replaced.start : replaced.end]),
        ]
        if number.is_phone:
            position = unit_end(translation, replaced.end)
        else:
            position = units.end() if units else replaced.end
    repaired = "".join(parts) + translation[position:]
    # A number written next to a separator can merge with its neighbour (０,０ → ０,１００ reads
    # as one number): such a repair would change what it meant to restore.
    if Counter(n.value for n in find_numbers(repaired)) != Counter(n.value for n in wanted):
        return translation
    return repaired


def keeps_numbers(source: str, translation: str) -> bool:
    """Whether `translation` writes every number of `source` (each occurrence)."""
    return not _unmatched(find_numbers(source), find_numbers(translation))


def _unmatched(numbers: list[Number], others: list[Number]) -> list[Number]:
    """The numbers of `numbers` that `others` lack, in order, each occurrence counted once: with
    one 3 in `others`, the second 3 of `numbers` is unmatched."""
    available = Counter(other.value for other in others)
    unmatched = []
    for number in numbers:
        if available[number.value]:
            available[number.value] -= 1
        else:
            unmatched.append(number)
    return unmatched


def _written_like(number: Number, model: str) -> str:
    """`number`'s value written in the style of `model`, the text of the number it replaces."""
    full_width = any("０" <= char <= "９" for char in model)
    if "-" in number.value:  # a phone number: its groups as the source writes them
        return number.value.translate(FULL_WIDTH_DIGITS) if full_width else number.value
    marks = {unicodedata.normalize("NFKC", char): char for char in model if not char.isdigit()}
    whole, _, fraction = number.value.partition(".")
    model_whole = model.split(marks.get(".", "."))[0]
    if "," in marks:
        separator = marks[","]
    elif sum(char.isdigit() for char in model_whole) > 3 or not number.grouped:
        separator = ""  # the translation writes a long number ungrouped, or the source does
    else:
        separator = "，" if full_width else ","
    groups = [whole[max(0, end - 3) : end] for end in range(len(whole), 0, -3)][::-1]
    text = separator.join(groups)
    if fraction:
        text += marks.get(".", "．" if full_width else ".") + fraction
    return text.translate(FULL_WIDTH_DIGITS) if full_width else text
