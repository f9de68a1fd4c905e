"""What a translation must carry over whatever its wording: the source's numbers, and no loops.

Number fidelity is the share of the numbers written in digits in the sources (years, prices,
times, counts, decimals) that the outputs hold in digits too, ASCII or full-width: numbers as
`llm_from_scratch/numbers.py` finds and compares them (decoding's number repair's notion), so
`1,200`, `1200` and `１，２００` are one number. A number counts once per occurrence: a source
with two 3s needs two in its output. Numbers written in kanji (三時, 千二百円) or with kanji
units (12万円 for 120,000) do not count: the metric is strict, and the references of
tests/data/everyday.ja write numbers in digits.

A loop is an output that repeats some 4-gram 3 times while its source repeats none; n-grams are
words as BLEU counts them in each side's language (MeCab for Japanese, sacreBLEU's 13a for
English), so the count does not depend on the model's vocabulary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from functools import cache

from llm_from_scratch.evaluation.metrics import word_bleu
from llm_from_scratch.numbers import numbers

LOOP_NGRAM = 4
LOOP_TIMES = 3


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


def looping_outputs(
    sources: Sequence[str],
    hypotheses: Sequence[str],
    source_lang: str,
    target_lang: str,
    segment_target: Callable[[str], str] | None = None,
) -> list[int]:
    """Positions of the hypotheses (in `target_lang`) that repeat a 4-gram 3 times where their
    source (in `source_lang`) does not; words as BLEU cuts them in each language.

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
    segment = segment_target or word_splitter(target_lang)
    return has_loop(segment(hypothesis).split()) and not has_loop(
        word_splitter(source_lang)(source).split()
    )


@cache
def word_splitter(language: str) -> Callable[[str], str]:
    """Text in `language` with its words, as BLEU cuts them, separated by spaces (loaded once:
    MeCab for Japanese)."""
    return word_bleu(language).tokenizer
