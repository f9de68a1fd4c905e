"""Which sentences a tokenizer learns from: at most `max_sentences` of a side, chosen by content.

BPE statistics settle long before a corpus ends, while training time grows with it, so a large
corpus is sampled (as sentencepiece's `input_sentence_size` does). A sentence is chosen by a
seeded hash of its text, not by its position: the sample is the same set of sentences however
the corpus files are ordered, and copies of a sentence are kept or left out together, so the
sample keeps the corpus's proportions in expectation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np


def sentence_keys(texts: Iterable[str], seed: int) -> np.ndarray:
    """A seeded 64-bit hash of each text, in order."""
    key = seed.to_bytes(8, "little", signed=True)
    return np.fromiter(
        (
            int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8, key=key).digest())
            for text in texts
        ),
        dtype=np.uint64,
    )


def sample_indices(keys: np.ndarray, max_sentences: int) -> np.ndarray:
    """Positions of the `max_sentences` smallest keys, ascending; all positions when there are
    no more than that. Copies of the last key taken are filled in corpus order, which cannot
    change the sample's texts."""
    if len(keys) <= max_sentences:
        return np.arange(len(keys))
    threshold = np.partition(keys, max_sentences - 1)[max_sentences - 1]
    below = np.flatnonzero(keys < threshold)
    at = np.flatnonzero(keys == threshold)[: max_sentences - len(below)]
    return np.sort(np.concatenate([below, at]))
