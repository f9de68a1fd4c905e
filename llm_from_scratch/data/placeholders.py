"""Number placeholders: a model that copies a symbol for each number instead of spelling it.

With `data.number_placeholders`, each number of a train pair's source that its target also
writes (the same value, ASCII or full-width, as `llm_from_scratch/numbers.py` compares them) is
replaced on both sides by a placeholder, the k-th such number by the k-th placeholder; numbers
the target writes otherwise (二人 for `2 people`, 200万 for `2 million`) stay as they are. The
translator masks every number of a source the same way and writes each placeholder of the
output back as its number (`restore_numbers`): a model cannot then merge two numbers (`2 to 3`
as ２３) or change a digit. Placeholders are characters of Unicode's private use area, which no
corpus text holds, so the tokenizers learn them as characters of their own.
"""

from __future__ import annotations

import re
from collections import Counter

from llm_from_scratch.numbers import FULL_WIDTH_DIGITS, Number, find_numbers, unit_end

# What a train pair's number masking does, for the keys of the caches and tokenizers built from
# masked text: bumped when it changes (2: a phone number is one number), so that none built
# before is reused.
NUMBER_MASKING = 2
# At most this many numbers of a sentence are masked; any after them stay digits.
PLACEHOLDERS = tuple(chr(0xE000 + k) for k in range(8))
# The names a sentence's translation copies (data/names.py), at most this many a sentence.
NAME_PLACEHOLDERS = tuple(chr(0xE010 + k) for k in range(4))
# Starts the source of a back-translated pair (data/back_translation.py).
BACK_TRANSLATION_TAG = chr(0xE020)
# What no user input may hold: the characters the model reads as placeholders or tags.
_RESERVED = dict.fromkeys(map(ord, PLACEHOLDERS + NAME_PLACEHOLDERS + (BACK_TRANSLATION_TAG,)))
_INDEX = {placeholder: k for k, placeholder in enumerate(PLACEHOLDERS + NAME_PLACEHOLDERS)}
_DROP_PLACEHOLDERS = dict.fromkeys(map(ord, PLACEHOLDERS))
_PLACEHOLDER = re.compile(f"[{''.join(PLACEHOLDERS)}]")
_FULL_WIDTH = FULL_WIDTH_DIGITS | str.maketrans(",.", "，．")


def mask_pair(source: str, target: str) -> tuple[str, str]:
    """`source` and `target` with the numbers they share masked alike (see the module
    docstring)."""
    available = find_numbers(target)
    in_source, in_target = [], []
    for number in find_numbers(source):
        match = next((other for other in available if other.value == number.value), None)
        if match is None:
            continue
        available.remove(match)
        in_source.append(number)
        in_target.append(match)
        if len(in_source) == len(PLACEHOLDERS):
            break
    return _masked(source, in_source), _masked(target, in_target)


def mask_numbers(text: str) -> tuple[str, list[str]]:
    """`text` with its numbers masked in order, and the masked numbers as `text` writes them.
    Placeholder characters `text` holds itself are dropped: they would read as numbers."""
    text = text.translate(_DROP_PLACEHOLDERS)
    numbers = find_numbers(text)[: len(PLACEHOLDERS)]
    return _masked(text, numbers), [text[number.start : number.end] for number in numbers]


def without_reserved(text: str) -> str:
    """`text` without the characters this project reserves (placeholders, the back-translation
    tag): in user input they would mean what the model was taught they mean."""
    return text.translate(_RESERVED)


def restore_numbers(text: str, numbers: list[str], language: str, digits: str) -> str:
    """`text`, in `language`, with each placeholder written back as its number (in Japanese in
    `digits`: `full_width` digits, separators and a phone number's hyphens, else as the source
    writes it); a placeholder with no number (the model wrote one its source lacks) is dropped,
    and so is a unit the model wrote after a phone number's (０９０－１２３４－５６７８歳), which
    takes none."""
    if language == "ja" and digits == "full_width":
        numbers = [number.translate(_FULL_WIDTH) for number in numbers]
    written = dict(zip(PLACEHOLDERS, numbers[: len(PLACEHOLDERS)], strict=False))
    parts, position = [], 0
    for placeholder in _PLACEHOLDER.finditer(text):
        number = written.get(placeholder[0], "")
        parts += [text[position : placeholder.start()], number]
        found = find_numbers(number)
        unitless = len(found) == 1 and found[0].is_phone
        position = unit_end(text, placeholder.end()) if unitless else placeholder.end()
    return "".join(parts) + text[position:]


def has_placeholders(text: str) -> bool:
    """Whether `text` holds a placeholder, of a number or of a name."""
    return any(char in _INDEX for char in text)


def keeps_placeholders(source: str, text: str) -> bool:
    """Whether `text` holds each placeholder of `source` (numbers' and names') as often as
    `source` does."""
    return Counter(_placeholders(source)) <= Counter(_placeholders(text))


def _placeholders(text: str) -> list[str]:
    return [char for char in text if char in _INDEX]


def mask_spans(text: str, spans: list[tuple[int, int]], placeholders: tuple[str, ...]) -> str:
    """`text` with its k-th span (`text[start:end]`, spans not overlapping, in any order)
    replaced by the k-th of `placeholders`; spans past the last placeholder stay as written."""
    parts, position = [], 0
    for placeholder, (start, end) in sorted(
        zip(placeholders, spans, strict=False), key=lambda pair: pair[1][0]
    ):
        parts += [text[position:start], placeholder]
        position = end
    return "".join(parts) + text[position:]


def _masked(text: str, numbers: list[Number]) -> str:
    """`text` with the k-th number of `numbers` replaced by the k-th number placeholder."""
    return mask_spans(text, [(number.start, number.end) for number in numbers], PLACEHOLDERS)
