"""Normalization and pre-tokenization: how text is cut into the pieces that BPE merges within.

BPE never merges across a piece boundary, so the pre-tokenizer decides what a token can span.
English follows GPT-2: a word carries its leading space (" cat"), and numbers, punctuation and
runs of whitespace are pieces of their own; since version 2 of the patterns, every digit is a
piece of its own. Japanese has no spaces, so it is cut where the
script changes: kanji, hiragana, katakana, other letters, digits and punctuation never share a
piece -- except that the default, "okurigana", lets a kanji run keep the hiragana that follow it
(食べ|る would otherwise be cut inside the word). On tanaka_graded at 8k tokens that is the
difference between 0.89x and 1.03x sentencepiece's characters per token for Japanese; "script"
cuts at every change. Python's `re` has no `\\p{Script}` classes, hence the explicit ranges.

Every pattern matches every character of any string, so joining the pieces gives the text back.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import partial

KANJI = "\u3005-\u3007\u303b\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
HIRAGANA = "\u3041-\u309f"
KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff\uff66-\uff9f"  # includes the long mark ー
JAPANESE = KANJI + HIRAGANA + KATAKANA


def _english_and_rest(numbers: str) -> str:
    """The alternatives after the Japanese ones; `numbers` matches digits."""
    return (
        r"'(?:s|t|re|ve|m|ll|d)"  # English contractions: "don't" -> "don", "'t"
        rf"| ?[^\W\d{JAPANESE}]+"  # other letters (Latin, Cyrillic, ...; `_` too)
        rf"|{numbers}"
        r"| ?[^\s\w]+"  # punctuation, symbols, emoji
        r"|\s+(?!\S)|\s+"  # whitespace; a run before a word leaves its last space to the word
    )


# Version 1: a number is one piece with its leading space (" 1995"), which BPE merges into
# tokens of several digits. Version 2: each digit is a piece (a space before it is one too), so
# every number is spelled digit by digit on both sides (1995 as 1 9 9 5, １９９５ as
# １ ９ ９ ５) and the model can copy a number it has never seen, a digit at a time.
_NUMBERS_V1 = r" ?\d+"
_DIGITS = r"\d"
_SCRIPT = rf" ?[{KANJI}]+| ?[{HIRAGANA}]+| ?[{KATAKANA}]+"
_OKURIGANA = rf" ?[{KANJI}]+[{HIRAGANA}]*| ?[{HIRAGANA}]+| ?[{KATAKANA}]+"

# Every pattern the project has shipped, by name and version. A tokenizer file stores its
# pattern, and `file_format` compiles it only if it is one of these: a pattern runs on every text
# encoded, and a crafted one can backtrack for minutes on a short request. To change a pattern,
# add a version; never edit a shipped one, so that files trained with it keep encoding as they
# did (tests/tokenizer/test_pretokenize.py pins each shipped pattern's digest).
SHIPPED_PATTERNS: dict[tuple[str, int], str] = {
    # Every script change is a boundary: 私 | は | テニス | 部員 | です | 。
    ("script", 1): f"{_SCRIPT}|{_english_and_rest(_NUMBERS_V1)}",
    # As "script", but a kanji run keeps the hiragana after it (okurigana, particles):
    # 私は | テニス | 部員です | 。
    ("okurigana", 1): f"{_OKURIGANA}|{_english_and_rest(_NUMBERS_V1)}",
    ("script", 2): f"{_SCRIPT}|{_english_and_rest(_DIGITS)}",
    ("okurigana", 2): f"{_OKURIGANA}|{_english_and_rest(_DIGITS)}",
}

# What a tokenizer is trained with: each name's latest version.
PRETOKENIZERS = {
    name: SHIPPED_PATTERNS[name, max(v for n, v in SHIPPED_PATTERNS if n == name)]
    for name, _ in SHIPPED_PATTERNS
}


def shipped_version(name: str, pattern: str) -> int | None:
    """The version of pre-tokenizer `name` whose pattern is `pattern`; None if none is."""
    for (shipped_name, version), shipped in SHIPPED_PATTERNS.items():
        if shipped_name == name and shipped == pattern:
            return version
    return None


NORMALIZATIONS = ("none", "nfkc")


def normalizer(normalization: str) -> Callable[[str], str]:
    """The tokenizer's normalization as a function ("nfkc" folds full-width forms, ligatures,
    ...); built once, so that encoding a sentence calls straight into C."""
    return partial(unicodedata.normalize, "NFKC") if normalization == "nfkc" else str
