"""This project's tokenizers as one 🤗 `tokenizers` tokenizer (tokenizer.json), id for id.

    normalizer      NFKC, where the source tokenizer normalizes (`tokenizers` decodes without
                    normalizing). Its Unicode tables are older than Python's: the characters
                    they lack a form for are replaced by Python's form first (`_newer_nfkc`).
                    What no replacement mends: the canonical order of combining marks newer than
                    its tables, next to another mark (Unicode 11-14 marks; text as rare as that)
    pre-tokenizer   the source's shipped pattern, isolated matches, with every character class
                    (\\d, \\w, \\s and bracketed sets) spelled out as the code points Python's `re`
                    gives it: `tokenizers` runs Oniguruma, whose \\w also holds combining marks and
                    whose \\s lacks the ASCII separators U+001C-U+001F
    model           BPE with byte fallback over one vocabulary: the source's ids first, then, for
                    separate vocabularies, the target's, each spelled with `target_mark` in
                    front so that no two tokens share a string; the merges are the source's, in
                    training order (a merge's rank is its order, as in `bpe.py`)
    post-processor  the source's <eos> after the ids, as `data/batch.py` feeds the encoder
    decoder         the mark removed, <0xNN> tokens joined into their UTF-8 bytes

Special tokens are whole tokens here too: `encode_special_tokens` keeps "<eos>" typed in a text
ordinary characters, as `BPETokenizer.encode` does, and decoding skips them.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache
from typing import Any

from llm_from_scratch.errors import UserError
from llm_from_scratch.tokenizer.bpe import BPETokenizer

# Noncharacters (never interchanged as text): the first that neither alphabet holds marks the
# target's tokens.
MARK_CANDIDATES = tuple(chr(code) for code in range(0xFDD0, 0xFDF0))
_CLASS_ESCAPES = "dwsDWS"
_BYTE_TOKEN = re.compile(r"<0x[0-9A-F]{2}>")


class TokenizerExportError(UserError):
    """A tokenizer the `tokenizers` library cannot hold id for id."""


def target_mark(src_tok: BPETokenizer, tgt_tok: BPETokenizer) -> str:
    """The character that starts every target token's string in a merged vocabulary."""
    used = set(src_tok.alphabet) | set(tgt_tok.alphabet)
    for mark in MARK_CANDIDATES:
        if mark not in used:
            return mark
    raise TokenizerExportError("every noncharacter U+FDD0-U+FDEF is in the alphabets")


def vocabulary(src_tok: BPETokenizer, tgt_tok: BPETokenizer, shared: bool) -> list[str]:
    """One string per id of the exported vocabulary: the source's tokens, then (separate
    vocabularies) the target's behind `target_mark`. Refuses a tokenizer two of whose tokens
    spell one string, or whose merge spells a byte token: BPE in `tokenizers` finds a token by
    its string."""
    tokens = _token_strings(src_tok, "source")
    if not shared:
        mark = target_mark(src_tok, tgt_tok)
        tokens += [mark + token for token in _token_strings(tgt_tok, "target")]
    return tokens


def _token_strings(tok: BPETokenizer, side: str) -> list[str]:
    strings = [tok.token_text(token_id) for token_id in range(tok.vocab_size)]
    seen: dict[str, int] = {}
    for token_id, text in enumerate(strings):
        if text in seen or (not tok.is_byte_token(token_id) and _BYTE_TOKEN.fullmatch(text)):
            raise TokenizerExportError(
                f"the {side} tokenizer's token {token_id} spells {text!r}, as token "
                f"{seen.get(text, 'of a byte')} does: the `tokenizers` library cannot tell them "
                "apart; retrain the tokenizer"
            )
        seen[text] = token_id
    return strings


@cache
def _all_characters() -> str:
    """Every Unicode scalar value (surrogates excluded: a Rust string holds none), in order."""
    return "".join(map(chr, [*range(0xD800), *range(0xE000, sys.maxunicode + 1)]))


def _ranges(python_class: str) -> list[tuple[int, int]]:
    """The scalar values `python_class` matches, as (first, last) runs of consecutive ones."""
    ranges = []
    for run in re.finditer(f"(?:{python_class})+", _all_characters()):
        first, last = _code(run.start()), _code(run.end() - 1)
        if first < 0xD800 <= last:  # the run steps over the surrogates
            ranges += [(first, 0xD7FF), (0xE000, last)]
        else:
            ranges.append((first, last))
    return ranges


def _code(index: int) -> int:
    """The code point at `index` of `_all_characters()`."""
    return index if index < 0xD800 else index + 0x800


def _complement(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The scalar values outside `ranges` (surrogates never among them)."""
    gaps, start = [], 0
    for low, high in [*ranges, (sys.maxunicode + 1, sys.maxunicode + 1)]:
        if start < low:
            gaps.append((start, low - 1))
        start = high + 1
    split = []
    for low, high in gaps:  # cut out the surrogates
        for part in ((low, min(high, 0xD7FF)), (max(low, 0xE000), high)):
            if part[0] <= part[1]:
                split.append(part)
    return split


@cache
def _explicit_class(python_class: str) -> str:
    """An Oniguruma class matching exactly the scalar values `python_class` matches in Python:
    its members, or for a class of most characters, `[^...]` of the others."""
    ranges = _ranges(python_class)
    count = sum(high - low + 1 for low, high in ranges)
    negate = count > len(_all_characters()) // 2
    if negate:
        ranges = _complement(ranges)
    body = "".join(
        f"\\x{{{low:X}}}" if low == high else f"\\x{{{low:X}}}-\\x{{{high:X}}}"
        for low, high in ranges
    )
    return f"[{'^' if negate else ''}{body}]"


def explicit_pattern(pattern: str) -> str:
    """`pattern` with each character class (\\d, \\w, \\s, their negations and bracketed sets)
    replaced by the explicit code points it matches under Python's `re`, so that Oniguruma
    splits text exactly as `re` does; the rest (alternation, groups, look-ahead) is kept."""
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern) and pattern[i + 1] in _CLASS_ESCAPES:
            out.append(_explicit_class(pattern[i : i + 2]))
            i += 2
        elif char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif char == "[":
            end = i + 1
            if end < len(pattern) and pattern[end] == "^":
                end += 1
            if end < len(pattern) and pattern[end] == "]":
                end += 1  # a leading "]" is a member
            while pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            out.append(_explicit_class(pattern[i : end + 1]))
            i = end + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


@cache
def _newer_nfkc() -> dict[str, str]:
    """The characters whose NFKC form Python's Unicode tables know and those of `tokenizers`
    (older) do not, each with Python's form: spelled out before its NFKC, they normalize alike.
    NFKC(x c y) = NFKC(x NFKC(c) y), since both begin by decomposing every character."""
    from tokenizers import normalizers

    theirs, forms = normalizers.NFKC(), {}
    characters = _all_characters()
    block = 4096
    for start in range(0, len(characters), block):
        chunk = characters[start : start + block]
        if theirs.normalize_str(chunk) == unicodedata.normalize("NFKC", chunk):
            continue
        for char in chunk:
            form = unicodedata.normalize("NFKC", char)
            if theirs.normalize_str(char) != form:
                forms[char] = form
    return forms


def special_token_strings(src_tok: BPETokenizer, tgt_tok: BPETokenizer, shared: bool) -> list[str]:
    """The strings of every special token of the exported vocabulary, in id order."""
    tokens = vocabulary(src_tok, tgt_tok, shared)
    ids = list(range(len(src_tok.special_tokens)))
    if not shared:
        ids += [src_tok.vocab_size + i for i in range(len(tgt_tok.special_tokens))]
    return [tokens[i] for i in ids]


def build_tokenizer(src_tok: BPETokenizer, tgt_tok: BPETokenizer, shared: bool) -> Any:
    """The `tokenizers.Tokenizer` that encodes as `src_tok` does (with the source's <eos> after,
    `add_special_tokens`) and decodes both sides' ids."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
    )

    tokens = vocabulary(src_tok, tgt_tok, shared)
    merges = [(src_tok.token_text(a), src_tok.token_text(b)) for a, b in src_tok.merge_pairs]
    model = models.BPE(
        vocab={token: token_id for token_id, token in enumerate(tokens)},
        merges=merges,
        byte_fallback=True,
        fuse_unk=False,
    )
    tokenizer = Tokenizer(model)
    if src_tok.normalization == "nfkc":
        tokenizer.normalizer = normalizers.Sequence(
            [
                *(normalizers.Replace(char, form) for char, form in _newer_nfkc().items()),
                normalizers.NFKC(),
            ]
        )
    tokenizer.pre_tokenizer = pre_tokenizers.Split(
        Regex(explicit_pattern(src_tok.pattern)), behavior="isolated"
    )
    steps = [] if shared else [decoders.Replace(target_mark(src_tok, tgt_tok), "")]
    tokenizer.decoder = decoders.Sequence([*steps, decoders.ByteFallback(), decoders.Fuse()])
    tokenizer.add_special_tokens(
        [
            AddedToken(text, special=True, normalized=False)
            for text in special_token_strings(src_tok, tgt_tok, shared)
        ]
    )
    eos = src_tok.token_text(src_tok.eos_id)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {eos}", pair=f"$A {eos} $B {eos}", special_tokens=[(eos, src_tok.eos_id)]
    )
    tokenizer.encode_special_tokens = True
    return tokenizer
