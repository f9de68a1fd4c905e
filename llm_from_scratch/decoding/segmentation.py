"""A text into what the model decodes: the sentences of each of its lines, cleaned, put in the
run's source style, numbers and rare names masked where the run masks them, each sentence's
source ids in pieces the model can take.

A sentence longer than `decoding.clause_split_tokens` is decoded clause by clause (packed into
pieces of at most that many tokens); one the model cannot take in one piece (longer than its
positional table, or than the output limit a * src_len + b allows) is split further, at
clauses, then words, then characters: never cut. Pure functions: text, tokenizer and limits
in, pieces out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_from_scratch.data.names import mask_unseen_names
from llm_from_scratch.data.placeholders import mask_numbers
from llm_from_scratch.data.sentences import split_sentences
from llm_from_scratch.data.source_style import prepare_source
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.conventions import TextConventions
from llm_from_scratch.decoding.lines import clean, split_lines
from llm_from_scratch.tokenizer.bpe import BPETokenizer

# Split points of a sentence too long for the model, coarsest first: after a clause's comma,
# semicolon or colon, then between words.
CLAUSE_MARKS = ",;:、；："
SPACELESS_CLAUSE_MARKS = "、；："  # end a clause with no space after them
CLAUSE_SPLIT = re.compile(rf"(?<=[{CLAUSE_MARKS}])(?=\s)|(?<=[{SPACELESS_CLAUSE_MARKS}])(?=\S)")
WORD_SPLIT = re.compile(r"(?<=\s)(?=\S)")
CLAUSE_END = re.compile(rf"[{CLAUSE_MARKS}]\s*$")


@dataclass
class SourceSentence:
    text: str  # as split from its line, cleaned, before the corpus's source style
    line: int  # the line of the text it is on, from 0
    pieces: list[list[int]]  # its source ids, in pieces the model can take (usually one)
    numbers: list[str] = field(default_factory=list)  # masked by placeholders, in order
    names: list[str] = field(default_factory=list)  # likewise
    # What each name is written back as: rendered in the target's script (the translator's name
    # dictionary or transliteration model), or as the source writes it.
    renderings: list[str] = field(default_factory=list)


def max_piece_tokens(max_positions: int, decode: DecodingConfig) -> int:
    """The longest source piece (EOS excluded) whose output limit a * (n + 1) + b still fits a
    positional table of `max_positions`, so that the limit never silently truncates a
    translation."""
    fitting = (
        max_positions
        if decode.max_len_a == 0
        else (max_positions - decode.max_len_b) / decode.max_len_a
    )
    return max(1, int(min(max_positions, fitting)) - 1)


def source_sentences(
    text: str,
    tokenizer: BPETokenizer,
    conventions: TextConventions,
    clause_tokens: int,
    max_tokens: int,
    render: Callable[[list[str]], list[str]] | None = None,
) -> list[SourceSentence]:
    """The sentences of each line of `text`, cleaned, in the run's style, in pieces (see
    `source_pieces`); none for an empty text. `split_sentences` knows English and Japanese
    punctuation alike, so either may be read. Masked names are written back as `render` gives
    them (a Japanese target's: the name dictionary, the transliteration model), else copied."""
    sentences = []
    for line, text_line in enumerate(split_lines(text)):
        for sentence in split_sentences(clean(text_line)):
            styled, numbers = prepare_source(sentence, conventions.source_style), []
            if conventions.number_placeholders:
                styled, numbers = mask_numbers(styled)
            names: list[str] = []
            if conventions.name_placeholders:
                styled, names = mask_unseen_names(styled, tokenizer)
            # No pieces: only characters the tokenizer's normalization removes.
            renderings = render(names) if render and names else names
            if pieces := source_pieces(styled, tokenizer, clause_tokens, max_tokens):
                sentences.append(SourceSentence(sentence, line, pieces, numbers, names, renderings))
    return sentences


def source_pieces(
    text: str, tokenizer: BPETokenizer, clause_tokens: int, max_tokens: int
) -> list[list[int]]:
    """Source ids of `text` in the pieces it is decoded in: its clauses packed into pieces of
    at most `clause_tokens` when it is longer than that (0: never), and any piece longer than
    `max_tokens` split further."""
    ids = tokenizer.encode(text)
    if clause_tokens and len(ids) > clause_tokens:
        clauses = [part for part in CLAUSE_SPLIT.split(text) if part]
        if len(clauses) > 1:
            packed = packed_parts(clauses, tokenizer, clause_tokens)
            return [p for part in packed for p in fitting_pieces(part, tokenizer, max_tokens)]
    return fitting_pieces(text, tokenizer, max_tokens, ids)


def fitting_pieces(
    text: str, tokenizer: BPETokenizer, max_tokens: int, ids: list[int] | None = None
) -> list[list[int]]:
    """Source ids of `text` (`ids`, when already encoded), split into pieces of at most
    `max_tokens`."""
    ids = tokenizer.encode(text) if ids is None else ids
    if len(ids) <= max_tokens:
        return [ids] if ids else []
    parts = split_once(text)
    if len(parts) == 1:  # one character spelled with more byte tokens than fit
        return [ids[i : i + max_tokens] for i in range(0, len(ids), max_tokens)]
    packed = packed_parts(parts, tokenizer, max_tokens)
    return [piece for part in packed for piece in fitting_pieces(part, tokenizer, max_tokens)]


def packed_parts(parts: list[str], tokenizer: BPETokenizer, limit: int) -> list[str]:
    """Consecutive `parts` joined into groups of at most `limit` tokens each, as few as that
    allows taking them in order (a part longer than `limit` is a group alone)."""
    groups, current = [], ""
    for part in parts:
        if current and len(tokenizer.encode(current + part)) > limit:
            groups.append(current)
            current = part
        else:
            current += part
    return [*groups, current]


def halved(text: str, tokenizer: BPETokenizer) -> list[list[int]]:
    """Source ids of `text` (a piece) in two: cut between its coarsest parts (clauses, else
    words) where the halves' token counts are nearest; one piece where it is one word (a word
    is never cut)."""
    ids = tokenizer.encode(text)
    parts = next(
        (
            found
            for pattern in (CLAUSE_SPLIT, WORD_SPLIT)
            if len(found := split_at(text, pattern)) > 1
        ),
        [text],
    )
    if len(parts) == 1:
        return [ids]
    cuts = [sum(map(len, parts[:k])) for k in range(1, len(parts))]
    cut = min(cuts, key=lambda at: abs(2 * len(tokenizer.encode(text[:at])) - len(ids)))
    return [tokenizer.encode(text[:cut]), tokenizer.encode(text[cut:])]


def split_at(text: str, pattern: re.Pattern[str]) -> list[str]:
    """`text` cut where `pattern` matches (empty parts dropped); the parts join back to it."""
    return [part for part in pattern.split(text) if part]


def split_once(text: str) -> list[str]:
    """`text` (one sentence) cut at its coarsest split points (clauses, else words, else in two
    halves); the parts join back to `text`."""
    for pattern in (CLAUSE_SPLIT, WORD_SPLIT):
        parts = split_at(text, pattern)
        if len(parts) > 1:
            return parts
    middle = len(text) // 2
    return [text[:middle], text[middle:]] if middle else [text]


def ends_clause(text: str) -> bool:
    """Whether `text` ends after a clause mark (a comma, semicolon or colon), spaces aside."""
    return CLAUSE_END.search(text) is not None
