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
- Translation: `mask_unseen_names` masks the capitalized words the source tokenizer spells in
  `UNSEEN_PIECES` pieces or more (words it rarely or never saw in training, which a frequent
  name is not: `Tom` is one piece, `Toyota` four), and
  `restore_names` writes each placeholder of the output back as the word: copied, in its own
  script, where the model would have made one up.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable

from llm_from_scratch.data.placeholders import NAME_PLACEHOLDERS, mask_spans

# A capitalized word of Latin letters (`NASA`, `McDonald`), not part of a longer word.
_NAME = re.compile(r"(?<![\w'’-])[A-Z][A-Za-z]+(?![\w'’-])")
# The same word in a target, where letters of other scripts may touch it (`Windows系`).
_LATIN_WORD = re.compile(r"(?<![A-Za-z])[A-Z][A-Za-z]+(?![A-Za-z])")
# A run of Unicode's Katakana block, the middle dot (エドガー・ドガ) and long mark included.
_KATAKANA_RUN = re.compile(r"[\u30a1-\u30ff]+")
# Before a sentence's first word: nothing, or opening quotes and brackets.
_SENTENCE_START = re.compile(r"[\s\"'“‘(\[]*")
_AFTER_SENTENCE = re.compile(r"[.!?:]['\"”’)\]]*\s+[\"'“‘(\[]*$")
# A word spelled in this many source tokens or more the model has rarely seen whole. Two
# pieces are often a known word split once (` Wednes` `day`) or an abbreviation (` M` `s`).
UNSEEN_PIECES = 3
_DROP_NAME_PLACEHOLDERS = dict.fromkeys(map(ord, NAME_PLACEHOLDERS))
_NAME_INDEX = {placeholder: k for k, placeholder in enumerate(NAME_PLACEHOLDERS)}
# A word and a katakana run pair up when they occur together in this many pairs, and their
# Dice coefficient (2 x those pairs / (the word's pairs + the run's pairs)) is at least this.
_MIN_PAIRS = 3
_MIN_DICE = 0.5


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
    for (name, run), count in together.items():
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


def mask_unseen_names(text: str, pieces: Callable[[str], int]) -> tuple[str, list[str]]:
    """`text` with each capitalized word the source tokenizer spells in `UNSEEN_PIECES` pieces
    or more masked in order, and the masked words. `pieces(word)` counts the tokens of `word`.
    A word counts as spelled after a space (a sentence's first word as well as written): the
    spelling a name is known by. A word whose lowercase form takes fewer pieces is a common word
    that a capital made rare (`Committee`, `Windows`): the model translates it. Name
    placeholders `text` holds itself are dropped."""
    text = text.translate(_DROP_NAME_PLACEHOLDERS)
    spans, names = [], []
    for match in _NAME.finditer(text):
        if len(spans) == len(NAME_PLACEHOLDERS):
            break
        name = match.group()
        spellings = {f" {name}", f" {name.lower()}"}
        if text[match.start() - 1 : match.start()] != " ":  # e.g. a text's first word
            spellings.add(name)
        if min(map(pieces, spellings)) >= UNSEEN_PIECES:
            spans.append(match.span())
            names.append(name)
    return mask_spans(text, spans, NAME_PLACEHOLDERS), names


def restore_names(text: str, names: list[str]) -> str:
    """`text` with each name placeholder written back as its name, once: the source held each
    once, so a repeat (`Toyotaと、Toyota`) or a placeholder with no name (one its source lacks)
    is dropped."""
    written: set[str] = set()
    parts = []
    for char in text:
        if char not in _NAME_INDEX:
            parts.append(char)
        elif char not in written and _NAME_INDEX[char] < len(names):
            parts.append(names[_NAME_INDEX[char]])
            written.add(char)
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
