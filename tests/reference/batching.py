"""The pair-by-pair form of `data/batching.py` `pack`, which the vectorized one is tested against
and `scripts/bench_batching.py` times it against."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from llm_from_scratch.data.config import SPECIALS_PER_SIDE


def reference_pack(
    order: Sequence[int], src_lens: np.ndarray, tgt_lens: np.ndarray, batch_tokens: int
) -> list[list[int]]:
    """Cut `order` greedily into consecutive batches of padded cost at most `batch_tokens`, a
    pair over the budget alone in its batch."""
    batches: list[list[int]] = []
    current: list[int] = []
    longest_src = longest_tgt = 0
    for index in order:
        src_max = max(longest_src, int(src_lens[index]))
        tgt_max = max(longest_tgt, int(tgt_lens[index]))
        cost = (len(current) + 1) * (src_max + tgt_max + 2 * SPECIALS_PER_SIDE)
        if current and cost > batch_tokens:
            batches.append(current)
            current, src_max, tgt_max = [], int(src_lens[index]), int(tgt_lens[index])
        current.append(int(index))
        longest_src, longest_tgt = src_max, tgt_max
    if current:
        batches.append(current)
    return batches
