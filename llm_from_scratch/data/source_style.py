"""The source-side text conventions of a corpus, applied alike to its sentences and to user input.

A model trained on small_parallel_enja has only seen lowercased English with punctuation and
clitics split off (`i can 't tell .`); `Hello.` typed by a user must reach it as `hello .`, or it
translates text unlike anything it saw. The rules are idempotent, so corpus text already in the
style passes through unchanged.
"""

from __future__ import annotations

import re

SOURCE_STYLES = ("raw", "lowercase_tokenized")

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})
# Periods that belong to their word in the corpus: an ellipsis, titles, and dotted abbreviations
# (p.m., o.k.).
_KEPT = re.compile(r"(\.\.\.|(?<![a-z])(?:mr|mrs|ms|dr|st|jr|vs|etc)\.|(?<![a-z])(?:[a-z]\.){2,})")
# Sentence punctuation stands alone; a period or comma between digits (3.5, 1,000) stays.
_PUNCTUATION = re.compile(r"(?<!\d)([.,])|([.,])(?!\d)|([!?;:\"()$])")
# Clitics split before the apostrophe, as the corpus has them: `don 't`, `i 'm`, `o 'clock`.
_CLITIC = re.compile(r"(?<=\w)'(?=\w)")


def prepare_source(text: str, style: str) -> str:
    """`text` in the source style `style` (one of SOURCE_STYLES)."""
    if style == "raw":
        return text
    if style != "lowercase_tokenized":
        raise ValueError(f"unknown source style {style!r}; expected one of {SOURCE_STYLES}")
    text = _CLITIC.sub(" '", text.translate(_APOSTROPHES).lower())
    # re.split with a group alternates free text (even indices) and kept forms (odd indices).
    parts = _KEPT.split(text)
    parts[::2] = [
        _PUNCTUATION.sub(lambda match: f" {match.group(0)} ", part) for part in parts[::2]
    ]
    return " ".join(" ".join(parts).split())
