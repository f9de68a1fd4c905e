"""What the data stage needs of a tokenizer, so it can be tested with simple doubles."""

from __future__ import annotations

import random
from typing import Protocol


class Tokenizer(Protocol):
    """Satisfied by `llm_from_scratch.tokenizer.BPETokenizer`."""

    pad_id: int
    bos_id: int
    eos_id: int
    vocab_size: int  # ids run from 0 to vocab_size - 1
    hash: str  # identifies the vocabulary and merges: part of the tokenized-data cache key

    def normalize(self, text: str) -> str: ...

    def encode_batch(self, texts: list[str]) -> list[list[int]]: ...

    def encode_with_dropout(self, text: str, dropout: float, rng: random.Random) -> list[int]: ...


def model_text(tok: Tokenizer, text: str) -> str:
    """The text a pair side is encoded from: normalized, without surrounding whitespace."""
    return tok.normalize(text).strip()
