"""What a translation must carry over whatever its wording: the source's numbers, and no loops.

Number fidelity is the share of the numbers written in digits in the sources (years, prices,
times, counts, decimals) that the outputs hold in digits too, ASCII or full-width: numbers as
`llm_from_scratch/numbers.py` finds and compares them (decoding's number repair's notion), so
`1,200`, `1200` and `１，２００` are one number. A number counts once per occurrence: a source
with two 3s needs two in its output. Numbers written in kanji (三時, 千二百円) or with kanji
units (12万円 for 120,000) do not count: the metric is strict, and the references of
tests/data/everyday.ja write numbers in digits.

A loop is an output that repeats itself where its source does not: it stutters (a unit of 1 to 4
words three or more times in a row: 大阪大阪大阪, 来週の来週の来週の), writes some 4-gram
three times anywhere, or doubles three characters in a row (持持つつてて). Words are those BLEU
counts in each side's language (MeCab for Japanese, sacreBLEU's 13a for English), so the count
does not depend on the model's vocabulary; a unit's copies are compared as text, since MeCab may
cut the same characters differently in a row (一番 / 一 番 / 一番). A number's own digits are
spared, as the no-repeat ban spares them: a number is one word, unless the source lacks it and
its digits stutter four times in a row (１６６６６６, ００００００), zeros after its first
digit counted as one (１００００, in a number of at most `MAX_SPARED_NUMBER_RUN` characters); a
year or a count repeats a digit three times (１９９９, １１１).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cache

from llm_from_scratch.evaluation.metrics import word_bleu
from llm_from_scratch.numbers import find_numbers, numbers

LOOP_NGRAM = 4
LOOP_TIMES = 3
STUTTER_UNIT_WORDS = 4  # the longest unit a stutter repeats, in words
STUTTER_TIMES = 3
NUMBER_STUTTER_TIMES = 4  # within a number the source lacks: 1999 and 111 are numbers
# The longest number whose zeros are spared, as the no-repeat ban spares numbers
# (decoding/common.py): past it a run of digits is a loop, not a number.
MAX_SPARED_NUMBER_RUN = 16
_ZEROS = re.compile("[0０]+")
# Three characters in a row each written twice (持持つつてて): the no-repeat ban turns a model's
# urge to repeat into doubling, which no repeated word shows. Letters outside ASCII only, so
# that an English word (bookkeeper) is not one.
_DOUBLED_RUN = re.compile(
    r"([^\W\d\x00-\x7f])\1(?!\1)([^\W\d\x00-\x7f])\2(?!\2)([^\W\d\x00-\x7f])\3"
)


@dataclass
class NumberFidelity:
    source_numbers: int  # numbers in all the sources
    kept: int  # of those, found in their output
    sentences_with_numbers: int
    sentences_all_kept: int  # sentences with numbers whose output holds every one

    @property
    def share(self) -> float | None:
        """kept / source_numbers; None when the sources hold no number."""
        return self.kept / self.source_numbers if self.source_numbers else None

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "share": self.share,
            "source_numbers": self.source_numbers,
            "kept": self.kept,
            "sentences_with_numbers": self.sentences_with_numbers,
            "sentences_all_kept": self.sentences_all_kept,
        }


def number_fidelity(sources: Sequence[str], hypotheses: Sequence[str]) -> NumberFidelity:
    """How many of the sources' numbers their hypotheses keep (see the module docstring)."""
    total = kept = with_numbers = all_kept = 0
    for source, hypothesis in zip(sources, hypotheses, strict=True):
        wanted = Counter(numbers(source))
        if not wanted:
            continue
        found = wanted & Counter(numbers(hypothesis))
        total += sum(wanted.values())
        kept += sum(found.values())
        with_numbers += 1
        all_kept += found == wanted
    return NumberFidelity(total, kept, with_numbers, all_kept)


def has_loop(words: Sequence[Hashable], n: int = LOOP_NGRAM, times: int = LOOP_TIMES) -> bool:
    """Whether some n-gram of `words` occurs at least `times` times (overlaps counted)."""
    counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    return any(count >= times for count in counts.values())


def has_stutter(
    words: Sequence[str], unit_words: int = STUTTER_UNIT_WORDS, times: int = STUTTER_TIMES
) -> bool:
    """Whether some unit of 1 to `unit_words` consecutive `words` is followed by copies of itself
    to make `times` in a row. Copies are compared as text and need only start and end between
    words, so 一番 / 一 番 / 一番 is 一番 three times. A unit without a letter or a digit (……, ！)
    is punctuation, not a stutter; case is ignored (Ha ha ha)."""
    folded = [word.casefold() for word in words]
    joined = "".join(folded)
    offsets = [0]
    for word in folded:
        offsets.append(offsets[-1] + len(word))
    between = set(offsets)
    for start in range(len(folded)):
        for end in range(start + 1, min(start + unit_words, len(folded)) + 1):
            unit = joined[offsets[start] : offsets[end]]
            if not any(char.isalnum() for char in unit):
                continue
            copies, position = 1, offsets[end]
            while joined.startswith(unit, position) and position + len(unit) in between:
                copies, position = copies + 1, position + len(unit)
            if copies >= times:
                return True
    return False


def repeats_itself(words: Sequence[str]) -> bool:
    """The loop detector (see the module docstring): a stutter, or a 4-gram three times."""
    return has_stutter(words) or has_loop(words)


def looping_outputs(
    sources: Sequence[str],
    hypotheses: Sequence[str],
    source_lang: str,
    target_lang: str,
    segment_target: Callable[[str], str] | None = None,
) -> list[int]:
    """Positions of the hypotheses (in `target_lang`) that loop where their source (in
    `source_lang`) does not: `repeats_itself` of their words as BLEU cuts them in each language.

    `segment_target` splits a hypothesis into space-separated words instead of BLEU.
    """
    return [
        index
        for index, (source, hypothesis) in enumerate(zip(sources, hypotheses, strict=True))
        if loops(source, hypothesis, source_lang, target_lang, segment_target)
    ]


def loops(
    source: str,
    hypothesis: str,
    source_lang: str,
    target_lang: str,
    segment_target: Callable[[str], str] | None = None,
) -> bool:
    """Whether `hypothesis` is a loop of `source`: `looping_outputs` of one pair."""
    kept = set(numbers(source))
    segment = segment_target or word_splitter(target_lang)
    if not doubles_characters(hypothesis) and not repeats_itself(
        loop_words(hypothesis, segment, kept)
    ):
        return False
    return not doubles_characters(source) and not repeats_itself(
        loop_words(source, word_splitter(source_lang), kept)
    )


def doubles_characters(text: str) -> bool:
    """Whether `text` writes three letters in a row twice each (持持つつてて; see the module
    docstring)."""
    return _DOUBLED_RUN.search(text) is not None


def loop_words(text: str, segment: Callable[[str], str], kept: set[str]) -> list[str]:
    """The words of `text` the loop detector compares: `segment`'s, but for its numbers (see the
    module docstring), whose values in `kept` (the source's) are spared whatever their digits."""
    words, position = [], 0
    for number in find_numbers(text):
        words += segment(text[position : number.start]).split()
        written = text[number.start : number.end]
        digits = [] if number.value in kept else _digit_words(written)
        words += digits if has_stutter(digits, times=NUMBER_STUTTER_TIMES) else [written]
        position = number.end
    return words + segment(text[position:]).split()


def _digit_words(written: str) -> list[str]:
    """A number's digits a character a word, but each run of zeros after its first digit, which
    a round number has (１００００), in a number of at most `MAX_SPARED_NUMBER_RUN` characters that
    does not start with a zero."""
    if len(written) > MAX_SPARED_NUMBER_RUN or _ZEROS.match(written):
        return list(written)
    words, position = [written[0]], 1
    for zeros in _ZEROS.finditer(written, 1):
        words += [*written[position : zeros.start()], zeros[0]]
        position = zeros.end()
    return words + list(written[position:])


@cache
def word_splitter(language: str) -> Callable[[str], str]:
    """Text in `language` with its words, as BLEU cuts them, separated by spaces (loaded once:
    MeCab for Japanese)."""
    return word_bleu(language).tokenizer
