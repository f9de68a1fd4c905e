"""Name placeholders: a model that copies a name it has never seen instead of garbling it.

A translation model spells a name from the pieces it learned: one it never saw comes out as
whatever those pieces usually mean (`Microsoft` as マッチッチッチ). With
`data.name_placeholders`, the model also learns a placeholder that stands for a name:

- Training: `name_lexicon` pairs each capitalized source word with the katakana run of the
  target that co-occurs with it (`Tom` with トム), from the train split itself. In half of the
  train pairs (chosen by a hash of the pair, so every run masks the same ones) each such name of
  the source, and its katakana (or the same word, where the target copies it) in the target, is
  replaced by the k-th name placeholder; the other half keep the names, so the model still
  learns to translate the names it sees often.
- Translation: `mask_unseen_names` masks the capitalized words the model rarely or never saw
  in training: those the source tokenizer's training text (the train split's source side, or
  the sample of it the tokenizer learned from) held fewer than `SEEN_TIMES` times, in any case
  (`tokenizer.word_count`). A word it held often is translated, a name (`Tom`) as well as a
  common word a capital starts (`Hello`, `Tuesday`), whatever the vocabulary size. Such
  words next to each other are one name behind one placeholder (`Larry Kudlow`): a model
  trained on short sentences drops two placeholders in a row more often than one. And
  `restore_names` writes each placeholder of the output back as the name: copied, in its own
  script, where the model would have made one up; or, into Japanese, as `render_names` renders
  it: a foreign name the name dictionary knows (name_dictionary.py) in its katakana, as
  Japanese news writes it (`Biden` バイデン), a name of several words word by word joined by a
  middle dot (ジョージ・フロイド), a word the dictionary does not know as a transliteration model
  writes it, where the translator has one (`unknown_words`). A Japanese name in Latin letters,
  an acronym and a word neither renders are still copied.

A tokenizer trained before words were counted (file version 1) has no counts: then a word
counts as unseen when the tokenizer spells it in `UNSEEN_PIECES` pieces or more, which
depends on the vocabulary size (a 4k vocabulary splits `Hello` in three).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Protocol

from llm_from_scratch.data.name_pairs import ONE_WORD_NAME
from llm_from_scratch.data.placeholders import NAME_PLACEHOLDERS, mask_spans
from llm_from_scratch.name_dictionary import KATAKANA, NameDictionary

# A capitalized word of Latin letters (`NASA`, `McDonald`), not part of a longer word.
_NAME = re.compile(r"(?<![\w'’-])[A-Z][A-Za-z]+(?![\w'’-])")
# The same word in a target, where letters of other scripts may touch it (`Windows系`).
_LATIN_WORD = re.compile(r"(?<![A-Za-z])[A-Z][A-Za-z]+(?![A-Za-z])")
# A run of Unicode's Katakana block, the middle dot (エドガー・ドガ) and long mark included.
_KATAKANA_RUN = re.compile(r"[\u30a1-\u30ff]+")
# Before a sentence's first word: nothing, or opening quotes and brackets.
_SENTENCE_START = re.compile(r"[\s\"'“‘(\[]*")
_AFTER_SENTENCE = re.compile(r"[.!?:]['\"”’)\]]*\s+[\"'“‘(\[]*$")
# A word the source tokenizer's training text held fewer times than this, in any case, the model
# has rarely seen: it cannot have learned its translation, so it is copied. Seen this often, a
# word is one it translates, and copying it would leave English in the output (`Helloは`). On
# the everyday corpora's held-out sentences this masks about as many words as the piece rule
# below did with the 8k vocabularies it was chosen with on dev.
SEEN_TIMES = 5
# Without word counts (a version-1 tokenizer file): a word spelled in this many source tokens or
# more the model has rarely seen whole. Two pieces are often a known word split once
# (` Wednes` `day`) or an abbreviation (` M` `s`).
UNSEEN_PIECES = 3
_DROP_NAME_PLACEHOLDERS = dict.fromkeys(map(ord, NAME_PLACEHOLDERS))
_NAME_INDEX = {placeholder: k for k, placeholder in enumerate(NAME_PLACEHOLDERS)}
# A word and a katakana run pair up when they occur together in this many pairs, and their
# Dice coefficient (2 x those pairs / (the word's pairs + the run's pairs)) is at least this.
_MIN_PAIRS = 3
_MIN_DICE = 0.5


class SourceTokenizer(Protocol):
    """What `mask_unseen_names` asks of the source tokenizer (tokenizer/bpe.py's BPETokenizer)."""

    def word_count(self, word: str) -> int | None:
        """Times its training text held `word`, in any case; None when it did not count."""
        ...

    def encode(self, text: str) -> list[int]: ...


def name_lexicon(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each capitalized source word after a sentence's first word that some target katakana run
    translates: the run that co-occurs with it most (see the module docstring)."""
    words, runs, together = Counter(), Counter(), Counter()
    for source, target in pairs:
        names = {match.group() for match in _NAME.finditer(source) if not _starts(source, match)}
        katakana = set(_KATAKANA_RUN.findall(target))
        words.update(names)
        runs.update(katakana)
        together.update((name, run) for name in names for run in katakana)
    lexicon: dict[str, tuple[int, str]] = {}
    # In sorted order, so that of two runs as frequent the same wins in every process: the
    # sets above iterate in an order string hashing, seeded per process, decides.
    for (name, run), count in sorted(together.items()):
        dice = 2 * count / (words[name] + runs[run])
        if count >= _MIN_PAIRS and dice >= _MIN_DICE and count > lexicon.get(name, (0, ""))[0]:
            lexicon[name] = (count, run)
    return {name: run for name, (_, run) in lexicon.items()}


def mask_pair(source: str, target: str, lexicon: dict[str, str]) -> tuple[str, str]:
    """`source` and `target` with the names they share masked alike, in half of all pairs (see
    the module docstring); the pair as it is in the other half."""
    if zlib.crc32(f"{source}\t{target}".encode()) % 2:
        return source, target
    source_spans, target_spans = [], []
    for match in _NAME.finditer(source):
        if len(source_spans) == len(NAME_PLACEHOLDERS):
            break
        name = match.group()
        span = _find(target, name, _LATIN_WORD, target_spans) or _find(
            target, lexicon.get(name), _KATAKANA_RUN, target_spans
        )
        if span:
            source_spans.append(match.span())
            target_spans.append(span)
    return (
        mask_spans(source, source_spans, NAME_PLACEHOLDERS),
        mask_spans(target, target_spans, NAME_PLACEHOLDERS),
    )


def mask_unseen_names(text: str, tokenizer: SourceTokenizer) -> tuple[str, list[str]]:
    """`text` with each capitalized word the model rarely saw masked in order (see the module
    docstring), words of them next to each other (`Larry Kudlow`) by one placeholder, and the
    masked names. Name placeholders `text` holds itself are dropped."""
    text = text.translate(_DROP_NAME_PLACEHOLDERS)
    spans: list[tuple[int, int]] = []
    for match in _NAME.finditer(text):
        if not _unseen(match, text, tokenizer):
            continue
        if spans and text[spans[-1][1] : match.start()] == " ":
            spans[-1] = (spans[-1][0], match.end())
        elif len(spans) < len(NAME_PLACEHOLDERS):
            spans.append(match.span())
    names = [text[start:end] for start, end in spans]
    return mask_spans(text, spans, NAME_PLACEHOLDERS), names


def _unseen(match: re.Match[str], text: str, tokenizer: SourceTokenizer) -> bool:
    """Whether the model rarely saw the capitalized word `match` of `text`: its training text
    held it fewer than `SEEN_TIMES` times. Without counts, whether the tokenizer spells it in
    `UNSEEN_PIECES` pieces or more, as written after a space (a sentence's first word as well
    as written): the spelling a name is known by. A word whose lowercase form takes fewer
    pieces is a common word that a capital made rare (`Committee`, `Windows`)."""
    name = match.group()
    count = tokenizer.word_count(name)
    if count is not None:
        return count < SEEN_TIMES
    spellings = {f" {name}", f" {name.lower()}"}
    if text[match.start() - 1 : match.start()] != " ":  # e.g. a text's first word
        spellings.add(name)
    return min(len(tokenizer.encode(spelling)) for spelling in spellings) >= UNSEEN_PIECES


def render_names(
    names: list[str], dictionary: NameDictionary, transliterations: Mapping[str, str] = {}
) -> list[str]:
    """How a Japanese translation writes each of `names`: the katakana the dictionary gives the
    foreign name (`NameDictionary.katakana`: `George Floyd`), else its words' katakana joined by
    a middle dot (ラリー・クドロー), each the dictionary's or, for a word it does not know, that of
    `transliterations`; else the name as written."""
    rendered = []
    for name in names:
        words = [dictionary.katakana(word) or transliterations.get(word) for word in name.split()]
        whole = dictionary.katakana(name) or (all(words) and "・".join(map(str, words)))
        rendered.append(whole or name)
    return rendered


def unknown_words(names: list[str], dictionary: NameDictionary) -> list[str]:
    """The words of `names` that a transliteration could render: one capitalized word of
    letters (`Kudlow`, not `NASA` or `McDonald`) that the dictionary does not know at all (a
    Japanese name it knows in kanji stays copied)."""
    return [
        word
        for name in names
        if not dictionary.katakana(name)
        for word in name.split()
        if ONE_WORD_NAME.fullmatch(word) and not dictionary.renderings(word)
    ]


def restore_names(text: str, names: list[str]) -> str:
    """`text` with each name placeholder written back as its name, once: the source held each
    once, so a repeat (`Toyotaと、Toyota`) or a placeholder with no name (one its source lacks)
    is dropped. Two names in katakana with nothing but spaces between them are one name's parts
    (`Larry Kudlow`), joined by a middle dot."""
    written: set[str] = set()
    parts: list[str] = []
    after_katakana = None  # where the parts after a name written in katakana start
    for char in text:
        if char not in _NAME_INDEX:
            parts.append(char)
            if not char.isspace():
                after_katakana = None
        elif char not in written and _NAME_INDEX[char] < len(names):
            name = names[_NAME_INDEX[char]]
            if after_katakana is not None and KATAKANA.fullmatch(name):
                parts[after_katakana:] = ["・"]
            parts.append(name)
            written.add(char)
            after_katakana = len(parts) if KATAKANA.fullmatch(name) else None
    return "".join(parts)


def _starts(text: str, match: re.Match[str]) -> bool:
    """Whether `match` is the first word of a sentence of `text`."""
    before = text[: match.start()]
    return bool(_SENTENCE_START.fullmatch(before) or _AFTER_SENTENCE.search(before))


def _find(
    text: str, wanted: str | None, pattern: re.Pattern[str], taken: list[tuple[int, int]]
) -> tuple[int, int] | None:
    """The first span of `text` that `pattern` matches as exactly `wanted`, not in `taken`."""
    if not wanted:
        return None
    for match in pattern.finditer(text):
        if match.group() == wanted and match.span() not in taken:
            return match.span()
    return None
