"""A naive BPE trainer, the textbook algorithm: recount every pair before every merge.

Slow and obviously correct; the incremental trainer must learn exactly the same merges.
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

from llm_from_scratch.tokenizer.bpe_training import merge_pair


def naive_merges(words: Counter[tuple[int, ...]], num_merges: int, first_id: int) -> list:
    merges = []
    for new_id in range(first_id, first_id + num_merges):
        counts: Counter[tuple[int, int]] = Counter()
        for word, freq in words.items():
            for pair in pairwise(word):
                counts[pair] += freq
        if not counts:
            break
        best = min(counts, key=lambda pair: (-counts[pair], pair))
        merges.append(best)
        merged: Counter[tuple[int, ...]] = Counter()
        for word, freq in words.items():
            merged[tuple(merge_pair(list(word), best, new_id))] += freq
        words = merged
    return merges


def naive_encode(symbols: list[int], merges: list[tuple[int, int]], first_id: int) -> list[int]:
    """Apply every merge, in training order, to the whole sequence."""
    for offset, pair in enumerate(merges):
        symbols = merge_pair(symbols, pair, first_id + offset)
    return symbols
