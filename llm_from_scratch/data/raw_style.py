"""Lowercased, tokenized English (`i can 't tell .`) back to raw text (`I can't tell.`).

A mixture's model reads one source style (data/source_style.py); a member written in
`lowercase_tokenized` joins a raw mixture through `to_raw`, the inverse of
`prepare_source(text, "lowercase_tokenized")` up to letter case. Detokenizing follows that
function's rules backwards: clitics and punctuation rejoin their word, `$` and `(` the next one,
paired quotes what they enclose. Casing is restored by a `Truecaser`: the sentence's first word
and `i` are capitalized, every other word takes the casing it has most often in raw text when not
at the start of a sentence (`tom` → `Tom`, `japan` → `Japan`, `english` → `English`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

_WORD = re.compile(r"[^\W\d_]+")
# Punctuation that the tokenized text sets apart but raw text attaches to the word before it.
_ATTACH_LEFT = frozenset({".", ",", "!", "?", ";", ":", "...", ")", "%"})
_ATTACH_RIGHT = frozenset({"(", "$"})
# Quote tokens and what raw text writes for them (the corpus writes a double quote as `''`).
_QUOTES = {"'": "'", '"': '"', "''": '"'}
# A clitic token: an apostrophe and letters (`'t`, `'s`, `'clock`).
_CLITIC = re.compile(r"'[^\W\d_]+$")
_SENTENCE_END = frozenset({".", "!", "?", "..."})


class Truecaser:
    """The usual casing of each word, counted in raw text where the word does not start a
    sentence (whose capital says nothing about the word)."""

    def __init__(self, forms: dict[str, str] | None = None) -> None:
        self.forms = forms or {}

    @classmethod
    def learn(cls, texts: Iterable[str]) -> Truecaser:
        """Count each word's spellings in `texts` (raw sentences), keeping the most frequent."""
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(_inner_words(text))
        forms: dict[str, str] = {}
        best: dict[str, int] = {}
        for form, count in counts.items():
            key = form.lower()
            if count > best.get(key, 0):
                forms[key], best[key] = form, count
        # A word seen only in lowercase needs no entry; it keeps its casing by default.
        return cls({key: form for key, form in forms.items() if form != key})

    def case(self, word: str) -> str:
        """`word` (lowercase letters) in its usual casing."""
        return "I" if word == "i" else self.forms.get(word, word)


def _inner_words(text: str) -> Iterable[str]:
    """The words of `text` that do not start a sentence (nor a quotation)."""
    for match in _WORD.finditer(text):
        before = text[: match.start()].rstrip()
        if before and before[-1] not in ".!?\"'(":
            yield match.group(0)


def to_raw(text: str, truecaser: Truecaser) -> str:
    """Lowercased, tokenized `text` as raw text, cased by `truecaser`."""
    tokens = text.split()
    # A lone quote is an apostrophe that ends a word (`ten minutes ' walk`); several pair up.
    paired = {quote for quote in _QUOTES if tokens.count(quote) >= 2}
    opening = dict.fromkeys(_QUOTES, True)
    capitalize = True
    pieces: list[str] = []
    space_before = False
    for token in tokens:
        glue_left = token in _ATTACH_LEFT or bool(_CLITIC.match(token))
        glue_right = token in _ATTACH_RIGHT
        if token in _QUOTES:
            if token in paired and opening[token]:
                glue_right = capitalize = True
            else:
                glue_left = True
            opening[token] = token not in paired or not opening[token]
            token = _QUOTES[token]
        word = _case_token(token, truecaser, capitalize)
        if _WORD.search(token) and not _CLITIC.match(token):
            capitalize = False
        if token in _SENTENCE_END:
            capitalize = True
        if pieces and space_before and not glue_left:
            pieces.append(" ")
        pieces.append(word)
        space_before = not glue_right
    return "".join(pieces)


def _case_token(token: str, truecaser: Truecaser, capitalize: bool) -> str:
    if _CLITIC.match(token):
        return token
    cased = _WORD.sub(lambda match: truecaser.case(match.group(0)), token)
    if capitalize:
        first = _WORD.search(cased)
        if first is not None:
            start = first.start()
            cased = cased[:start] + cased[start].upper() + cased[start + 1 :]
    return cased
