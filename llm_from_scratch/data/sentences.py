"""Sentence splitting of one line of English or Japanese text, the source of truth for where the
translator cuts a paragraph.

The model is trained on single sentences, so a line of several is translated sentence by
sentence. A split is considered after each run of terminators (`.` `!` `?` `…` `。` `！` `？`)
and the closing quotes and brackets that follow it:

- Japanese terminators always end a sentence, space or not, except before the particle `と`
  after a closing quote (`「はい。」と言った`).
- `.` `!` `?` `…` end one only before a space, the end of the line, or a Japanese character,
  so decimals (3.5, 1,200.50), URLs (example.com) and emails (john.smith@example.com) stay whole.
- After a closing quote, a lowercase word continues the sentence (`"Really?" he asked.`).
- `!` and `?` end a sentence; so does `.` after an ordinary word or a number, whatever the case
  of the next word, so lowercase typing (`i like cats. i have a dog.`) splits too.
- A period does not end a sentence after a title or Latin abbreviation (Mr., Dr., St., e.g.,
  i.e. ...), after an initial (J. K. Rowling), after a list number that opens the sentence
  (`1. Buy milk.`), or after No./p./a month before a number (No. 5, Jan. 5).
- An ellipsis and an abbreviation that can also end a sentence (etc., p.m., U.S., Inc., Jan. ...)
  end one only before a capitalized word (or one of another script): `at 5 p.m. tomorrow` stays
  whole, `at 5 p.m. The next day` splits. `the U.S. Army` splits too; a wrong split costs some
  fluency, never text: every sentence is translated.
"""

from __future__ import annotations

import re

_LATIN_ENDS = ".!?…"
_JAPANESE_ENDS = "。！？｡"
_CLOSERS = "\"'”’)]}」』）】〕〉》"
_OPENERS = "\"'“‘([{「『（【〔〈《"
# Terminators with the closers after them: a candidate split point is just past a match.
_BOUNDARY = re.compile(f"[{re.escape(_LATIN_ENDS + _JAPANESE_ENDS)}]+[{re.escape(_CLOSERS)}]*")
# Hiragana, katakana (full and half width), CJK ideographs, Japanese punctuation and brackets.
_JAPANESE = re.compile(r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff01-\uff0f\uff61-\uff9f]")

# Never end a sentence: titles and Latin abbreviations that a word always follows.
_NEVER_FINAL = {
    *("mr", "mrs", "ms", "dr", "prof", "rev", "hon", "gen", "col", "capt", "lt", "sgt", "st"),
    *("mt", "vs", "e.g", "i.e", "cf", "viz", "approx"),
}
_MONTHS = ["jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"]
# Abbreviations before a number: `No. 5`, `p. 12`, `Jan. 5`.
_BEFORE_NUMBERS = {"no", "nos", "vol", "p", "pp", "ch", "sec", "fig", "art", *_MONTHS}
# Abbreviations that may also end a sentence: they do before a capitalized word.
_MAYBE_FINAL = {"etc", "inc", "ltd", "co", "corp", "jr", "sr", "bros", "ft", *_MONTHS}
_DOTTED = re.compile(r"(?:[a-z]\.)+[a-z]")  # a.m, p.m, u.s, u.k (the final period excluded)
_INITIAL = re.compile(r"[A-Z]")
_NUMBER = re.compile(r"\d+")
_SPACES = re.compile(r"\s*")
_OPENING = re.compile(f"[{re.escape(_OPENERS)}]*")


def split_sentences(line: str) -> list[str]:
    """The sentences of `line`, stripped, in order; none for a blank line. Nothing is left out:
    joined with spaces they give `line` back, but for the spaces at the split points."""
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(line):
        if _ends_sentence(line, start, match):
            sentences.append(line[start : match.end()])
            start = match.end()
    sentences.append(line[start:])
    return [sentence.strip() for sentence in sentences if sentence.strip()]


def _ends_sentence(line: str, start: int, match: re.Match[str]) -> bool:
    """Whether the terminators (and closers) of `match` end the sentence that began at `start`.
    Indices, not slices: the work stays linear in the line however many periods it holds."""
    terminators = match.group().rstrip(_CLOSERS)
    closed = len(terminators) < len(match.group())
    following = _SPACES.match(line, match.end()).end()  # where the next word starts
    if following == len(line):
        return True
    if any(char in _JAPANESE_ENDS for char in terminators):
        return not (closed and line.startswith("と", following))
    if following == match.end() and not _JAPANESE.match(line, following):
        return False  # inside a number, a URL or an email: 3.5, example.com
    word = _OPENING.match(line, following).end()
    first = line[word : word + 1]
    if closed and first.islower():
        return False  # quoted speech goes on: "Really?" he asked.
    if "!" in terminators or "?" in terminators:
        return True
    if terminators != ".":  # an ellipsis: `...`, `…`
        return _starts_sentence(first)
    return _period_ends_sentence(line, start, match.start(), first)


def _period_ends_sentence(line: str, start: int, period: int, first: str) -> bool:
    """Whether the period at `period` ends the sentence that began at `start`, `first` being the
    first character of the next word."""
    if period == start or line[period - 1].isspace():
        return True  # a period on its own, as tokenized corpora write it: `cats . i`
    begin = period
    while begin > start and not line[begin - 1].isspace():
        begin -= 1
    word = line[begin:period].lstrip(_OPENERS)
    lowered = word.lower()
    if lowered in _NEVER_FINAL or _INITIAL.fullmatch(word):
        return False
    if lowered in _BEFORE_NUMBERS and first.isdigit():
        return False
    if _NUMBER.fullmatch(word) and _SPACES.fullmatch(line, start, begin):
        return False  # a list number opening the sentence: `1. Buy milk.`
    if lowered in _MAYBE_FINAL or _DOTTED.fullmatch(lowered):
        return _starts_sentence(first)
    return True


def _starts_sentence(first: str) -> bool:
    """Whether a word beginning with `first` looks like a sentence's start after an ambiguous
    period: capitalized, or in a script without case (Japanese)."""
    return first.isupper() or (first.isalpha() and not first.islower())
