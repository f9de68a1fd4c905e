"""One optimizer step's batches on this rank, with the target tokens of the step on every rank;
and the shapes of an epoch's batches, which `torch.compile` compiles for.

The loss is divided by the target tokens of the whole global step. Every rank knows that count
without asking the others: an epoch's batches are one list that every rank computes alike, and
rank r of W takes its batches r, r + W, r + 2W... (`data/batching.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from llm_from_scratch.data.batch import Batch
from llm_from_scratch.data.batching import TokenBudgetBatchSampler
from llm_from_scratch.data.config import SPECIALS_PER_SIDE


class StepBatches(list[Batch]):
    """This rank's micro-batches of one optimizer step."""

    def __init__(self, batches: Iterable[Batch], global_target_tokens: int) -> None:
        super().__init__(batches)
        self.global_target_tokens = global_target_tokens  # of the step on every rank


def global_target_tokens(sampler: TokenBudgetBatchSampler, first: int, count: int) -> int:
    """The target tokens (EOS included) of every rank's batches `first` to `first + count - 1`
    of the epoch, counted as each rank counts its own batches."""
    world_size = sampler.world_size
    batches = sampler.epoch_batches()[first * world_size : (first + count) * world_size]
    examples = np.concatenate([np.asarray(batch, dtype=np.int64) for batch in batches])
    return int(sampler.tgt_lens[examples].sum()) + len(examples) * SPECIALS_PER_SIDE


def batch_shapes(sampler: TokenBudgetBatchSampler) -> set[tuple[int, int, int]]:
    """The distinct (rows, source length, target length) of this rank's batches of the
    sampler's epoch, padded as the collator pads them (`TokenBudgetBatchSampler.padded_shape`)."""
    return {sampler.padded_shape(batch) for batch in sampler}
