"""Character-level BPE with byte fallback: training, encoding, decoding.

Vocabulary layout (ids in this order):
    special tokens   <pad> <bos> <eos>, then user-defined ones
    256 byte tokens  <0x00> ... <0xFF>: the UTF-8 bytes of any character outside the alphabet
    alphabet         the characters covering `character_coverage` of the training text
    merges           one token per learned merge, in the order they were learned

Unlike byte-level BPE, a Japanese character is one symbol from the start, so no merges are spent
rebuilding 3-byte characters; rare characters still encode (as bytes), so there is no <unk>.
Byte tokens are never merged: they only stand in for characters the alphabet lacks.

Training also counts the words of the training text (`word_count`): whether a model trained on
that text has seen a word is a fact of the text, which a word's number of pieces only hints at
and which changes with the vocabulary size.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from itertools import pairwise, repeat
from pathlib import Path
from typing import Any, NamedTuple

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.tokenizer import file_format
from llm_from_scratch.tokenizer.bpe_training import (
    count_words,
    learn_merges,
    select_alphabet,
    word_key,
)
from llm_from_scratch.tokenizer.config import check_training_options
from llm_from_scratch.tokenizer.file_format import MIN_WORD_COUNT, NUM_BYTES
from llm_from_scratch.tokenizer.pretokenize import PRETOKENIZERS, normalizer
from llm_from_scratch.tokenizer.special_tokens import BOS, EOS, PAD, RESERVED

MAX_CACHED_PIECES = 1 << 18
DIGIT_CHARACTERS = frozenset("0123456789０１２３４５６７８９")  # ASCII and full-width
ZERO_CHARACTERS = frozenset("0０")
SEPARATOR_CHARACTERS = (",", ".", "\uff0c", "\uff0e")  # and their full-width forms
NO_MERGE = 1 << 62  # the rank of a pair that is never merged: above every token id


class NumberIds(NamedTuple):
    """Token ids of numbers' pieces: each token's text is these characters only, a leading space
    allowed."""

    zeros: frozenset[int]  # 0, 00, ０…
    digits: frozenset[int]  # any digits, ASCII or full-width, the zeros included
    separators: frozenset[int]  # the thousands and decimal separators


class _PieceEncoder(dict):
    """piece -> token ids, memoized: a missing piece is encoded by BPE and stored.

    The memo is emptied when full, which keeps memory bounded on unbounded input while a
    training corpus's frequent pieces stay hot. BPE replays the merges in training order: the
    adjacent pair merged earliest goes first, and a merged id doubles as its rank. Merging one
    occurrence at a time is equivalent, since the pair's other occurrences still have the lowest
    rank on the next round.
    """

    def __init__(
        self, char_ids: dict[str, int], merged_id: dict[tuple[int, int], int], first_byte_id: int
    ) -> None:
        super().__init__()
        self.char_id = char_ids.get
        self.rank = merged_id.get
        self.first_byte_id = first_byte_id

    def __missing__(self, piece: str) -> list[int]:
        symbols = list(map(self.char_id, piece))
        if None in symbols:
            symbols = self._with_byte_fallback(piece)
        rank = self.rank
        ranks = list(map(rank, pairwise(symbols), repeat(NO_MERGE)))  # ranks[i]: symbols i, i+1
        while ranks:
            best = min(ranks)
            if best == NO_MERGE:
                break
            i = ranks.index(best)
            symbols[i] = best
            del symbols[i + 1], ranks[i]
            # Only the pairs that touch the new token change.
            if i > 0:
                ranks[i - 1] = rank((symbols[i - 1], best), NO_MERGE)
            if i < len(ranks):
                ranks[i] = rank((best, symbols[i + 1]), NO_MERGE)
        if len(self) >= MAX_CACHED_PIECES:
            self.clear()
        self[piece] = symbols
        return symbols

    def sample(self, piece: str, dropout: float, rng: random.Random) -> list[int]:
        """One BPE-dropout segmentation of `piece` (Provilkov et al., 2020), never memoized.

        At every step each applicable merge is skipped with probability `dropout`, and the
        earliest-learned one that survives is applied; the piece is done when none survives.
        With `dropout=0` this is BPE itself.
        """
        symbols = self._with_byte_fallback(piece)
        rank = self.rank
        while True:
            candidates = sorted(
                (merged, i)
                for i, pair in enumerate(pairwise(symbols))
                if (merged := rank(pair)) is not None
            )
            for merged, i in candidates:
                if rng.random() >= dropout:
                    symbols[i : i + 2] = [merged]
                    break
            else:
                return symbols

    def _with_byte_fallback(self, piece: str) -> list[int]:
        """Character ids, and the UTF-8 byte tokens of characters outside the alphabet."""
        symbols = []
        for char in piece:
            char_id = self.char_id(char)
            if char_id is None:
                utf8 = char.encode("utf-8", "surrogatepass")
                symbols += [self.first_byte_id + byte for byte in utf8]
            else:
                symbols.append(char_id)
        return symbols


class BPETokenizer:
    """A trained tokenizer. Build one with `BPETokenizer.train` or `BPETokenizer.load`."""

    def __init__(
        self,
        *,
        alphabet: Sequence[str],
        merges: Sequence[tuple[int, int]],
        special_tokens: Sequence[str] = RESERVED,
        normalization: str = "nfkc",
        pretokenizer: str = "okurigana",
        pattern: str | None = None,
        training_options: dict[str, Any] | None = None,
        word_counts: Mapping[str, int] | None = None,
    ) -> None:
        self.alphabet = list(alphabet)
        self.merge_pairs = [tuple(pair) for pair in merges]
        self.special_tokens = list(special_tokens)
        self.normalization = normalization
        self.pretokenizer = pretokenizer
        self.pattern = pattern if pattern is not None else PRETOKENIZERS[pretokenizer]
        self.training_options = dict(training_options or {})
        # None: a tokenizer (file version 1) trained before words were counted.
        self.word_counts = None if word_counts is None else dict(word_counts)

        self._split = re.compile(self.pattern).findall
        self._special_ids = {token: i for i, token in enumerate(self.special_tokens)}
        self._first_byte_id = len(self.special_tokens)
        first_char_id = self._first_byte_id + NUM_BYTES
        self._char_ids = {char: first_char_id + i for i, char in enumerate(self.alphabet)}
        first_merge_id = first_char_id + len(self.alphabet)
        # A pair's merged id doubles as its rank: earlier merges have smaller ids.
        self._merged_id = {pair: first_merge_id + i for i, pair in enumerate(self.merge_pairs)}

        self._token_bytes = [b""] * len(self.special_tokens)  # decode leaves specials out
        self._token_bytes += [bytes([byte]) for byte in range(NUM_BYTES)]
        self._token_bytes += [char.encode("utf-8", "surrogatepass") for char in self.alphabet]
        for first, second in self.merge_pairs:
            self._token_bytes.append(self._token_bytes[first] + self._token_bytes[second])
        self._normalize = normalizer(normalization)
        self._pieces = _PieceEncoder(self._char_ids, self._merged_id, self._first_byte_id)

    # --- training -------------------------------------------------------------------------

    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        *,
        character_coverage: float = 0.9995,
        normalization: str = "nfkc",
        pretokenizer: str = "okurigana",
        special_tokens: Sequence[str] = (),
        required_characters: Sequence[str] = (),
    ) -> BPETokenizer:
        """Learn a vocabulary of `vocab_size` tokens (fewer if the corpus runs out of pairs).

        `special_tokens` are user-defined extras placed after <pad>, <bos>, <eos>.
        `required_characters` join the alphabet however rare (e.g. number placeholders).
        """
        check_training_options(
            vocab_size, character_coverage, normalization, pretokenizer, special_tokens
        )
        split = re.compile(PRETOKENIZERS[pretokenizer]).findall
        normalize = normalizer(normalization)
        pieces: Counter[str] = Counter()
        for text in texts:
            pieces.update(split(normalize(text)))

        char_counts: Counter[str] = Counter()
        for piece, count in pieces.items():
            for char in piece:
                char_counts[char] += count
        alphabet = select_alphabet(char_counts, character_coverage)
        alphabet += [char for char in dict.fromkeys(required_characters) if char not in alphabet]
        all_special = [*RESERVED, *special_tokens]
        base_size = len(all_special) + NUM_BYTES + len(alphabet)
        if base_size > vocab_size:
            raise file_format.TokenizerError(
                f"vocab_size={vocab_size} cannot hold the {len(alphabet)} characters needed for "
                f"character_coverage={character_coverage} plus {NUM_BYTES} byte tokens and "
                f"{len(all_special)} special tokens: raise vocab_size or lower the coverage"
            )

        # Merges never cross a byte-fallback character, so cut words there: what remains are
        # runs of alphabet ids, and runs of one symbol have nothing to merge.
        char_ids = {char: len(all_special) + NUM_BYTES + i for i, char in enumerate(alphabet)}
        words: Counter[tuple[int, ...]] = Counter()
        for piece, count in pieces.items():
            run: list[int] = []
            for char in piece:
                char_id = char_ids.get(char)
                if char_id is not None:
                    run.append(char_id)
                    continue
                if len(run) > 1:
                    words[tuple(run)] += count
                run = []
            if len(run) > 1:
                words[tuple(run)] += count

        merges = learn_merges(words, num_merges=vocab_size - base_size, first_id=base_size)
        return cls(
            word_counts=count_words(pieces, MIN_WORD_COUNT),
            alphabet=alphabet,
            merges=merges,
            special_tokens=all_special,
            normalization=normalization,
            pretokenizer=pretokenizer,
            training_options={"vocab_size": vocab_size, "character_coverage": character_coverage},
        )

    # --- encoding and decoding ------------------------------------------------------------

    def word_count(self, word: str) -> int | None:
        """How many times the training text held `word` (one word of letters), in any case:
        `Hello` counts ` hello` and `HELLO` too. 0 for a word it held fewer than
        `file_format.MIN_WORD_COUNT` times, or that is not a word of a cased script (Latin,
        Greek, Cyrillic: not Japanese); None when the tokenizer was trained before words were
        counted (a version-1 file)."""
        if self.word_counts is None:
            return None
        key = word_key(self._normalize(word).strip())
        return 0 if key is None else self.word_counts.get(key, 0)

    def normalize(self, text: str) -> str:
        """The normalization `encode` applies; `decode(encode(s)) == tok.normalize(s)`."""
        return self._normalize(text)

    def encode(self, text: str) -> list[int]:
        """Token ids of `text`; special tokens are never produced from text."""
        ids: list[int] = []
        piece_ids = self._pieces  # encodes a piece it has not seen (BPE), then remembers it
        for piece in self._split(self._normalize(text)):
            ids += piece_ids[piece]
        return ids

    def encode_with_dropout(self, text: str, dropout: float, rng: random.Random) -> list[int]:
        """A random segmentation of `text` for training (BPE-dropout): each merge is skipped with
        probability `dropout` at each step, so the model sees words split in varied ways.

        Every sample decodes to `normalize(text)`; `dropout=0` gives `encode(text)`, and
        `dropout=1` the characters (and fallback bytes) alone.
        """
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout={dropout} must be in [0, 1]")
        ids: list[int] = []
        for piece in self._split(self._normalize(text)):
            ids += self._pieces.sample(piece, dropout, rng)
        return ids

    def encode_batch(self, texts: Iterable[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def decode(self, ids: Sequence[int]) -> str:
        """The text of `ids`. Special tokens are left out; bytes that are not valid UTF-8
        (a model can emit any id sequence) become U+FFFD instead of raising."""
        if ids and not 0 <= min(ids) <= max(ids) < self.vocab_size:
            bad = next(i for i in ids if not 0 <= i < self.vocab_size)
            raise ValueError(f"token id {bad} is outside the vocabulary [0, {self.vocab_size})")
        data = b"".join([self._token_bytes[i] for i in ids])
        try:
            # surrogatepass: lone surrogates encoded by `encode` come back as themselves.
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return data.decode("utf-8", "replace")

    # --- vocabulary -----------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return len(self._token_bytes)

    @property
    def pad_id(self) -> int:
        return self._special_ids[PAD]

    @property
    def bos_id(self) -> int:
        return self._special_ids[BOS]

    @property
    def eos_id(self) -> int:
        return self._special_ids[EOS]

    def special_id(self, token: str) -> int:
        """The id of a special token, reserved or user-defined, e.g. `tok.special_id("<sep>")`."""
        try:
            return self._special_ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not a special token of this tokenizer") from None

    def is_byte_token(self, token_id: int) -> bool:
        """True for the <0xNN> tokens that spell characters outside the alphabet."""
        return self._first_byte_id <= token_id < self._first_byte_id + NUM_BYTES

    @cached_property
    def number_ids(self) -> NumberIds:
        """The tokens numbers are written with. Numbers repeat n-grams of these (10000,
        1,000,000, and 1995 beside 1998), which no-repeat n-gram bans must spare
        (decoding/common.py)."""
        zeros, digits, separators = set(), set(), set()
        for token_id in range(self._first_byte_id + NUM_BYTES, self.vocab_size):
            text = self._token_bytes[token_id].decode("utf-8", "replace").lstrip(" ")
            characters = set(text)
            if text and characters <= DIGIT_CHARACTERS:
                digits.add(token_id)
                if characters <= ZERO_CHARACTERS:
                    zeros.add(token_id)
            elif text in SEPARATOR_CHARACTERS:
                separators.add(token_id)
        return NumberIds(frozenset(zeros), frozenset(digits), frozenset(separators))

    def token_text(self, token_id: int) -> str:
        """Readable form of one token: special tokens by name, byte tokens as <0xNN>."""
        if token_id < self._first_byte_id:
            return self.special_tokens[token_id]
        if self.is_byte_token(token_id):
            return f"<0x{token_id - self._first_byte_id:02X}>"
        return self._token_bytes[token_id].decode("utf-8", "surrogatepass")

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The learned merges as text pairs, in the order they were learned."""
        return [(self.token_text(a), self.token_text(b)) for a, b in self.merge_pairs]

    # --- persistence ----------------------------------------------------------------------

    def to_json(self) -> str:
        """The canonical JSON text of the tokenizer: what `save` writes (see file_format.py).
        One without word counts is written as version 1, as it was read, keeping its hash."""
        data = {
            "format": file_format.FORMAT,
            "version": 1,
            "normalization": self.normalization,
            "pretokenizer": {"name": self.pretokenizer, "pattern": self.pattern},
            "special_tokens": self.special_tokens,
            "alphabet": self.alphabet,
            "merges": [list(pair) for pair in self.merge_pairs],
            "training_options": self.training_options,
        }
        if self.word_counts is not None:
            data.update(version=file_format.VERSION, word_counts=self.word_counts)
        return file_format.canonical_json(data)

    @classmethod
    def from_json(cls, text: str, origin: str = "tokenizer JSON") -> BPETokenizer:
        return cls(**file_format.parse(text, origin))

    @cached_property
    def hash(self) -> str:
        """sha256 of the canonical JSON, i.e. of the saved file: equal hash, same tokenizer."""
        return hashlib.sha256(self.to_json().encode("utf-8")).hexdigest()

    def save(self, path: str | Path) -> None:
        with atomic_writer(path) as file:  # a reader never sees a half-written file
            file.write(self.to_json().encode("utf-8"))

    @classmethod
    def load(cls, path: str | Path) -> BPETokenizer:
        return cls(**file_format.read(Path(path)))
