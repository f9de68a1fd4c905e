"""Every DDP rank counts the target tokens of the whole global step from the epoch's batch list,
without asking the others: the count is what the ranks' own batches hold."""

from __future__ import annotations

import itertools

import numpy as np

from llm_from_scratch.data.batching import TokenBudgetBatchSampler
from llm_from_scratch.data.shapes import plan_shapes

WORLD_SIZE, FIRST, COUNT = 2, 3, 2


def test_the_global_count_is_the_sum_over_the_ranks_batches(copy_task):
    _, data, _ = copy_task
    loaders = [data.train_loader(1, rank=rank, world_size=WORLD_SIZE) for rank in range(WORLD_SIZE)]
    held = sum(
        batch.tgt_tokens
        for loader in loaders
        for batch in itertools.islice(loader, FIRST, FIRST + COUNT)
    )
    counted = [loader.batch_sampler.global_target_tokens(FIRST, COUNT) for loader in loaders]
    assert counted == [held, held]


def test_static_batches_are_compiled_for_the_plan_s_shapes_not_their_longest_pairs():
    rng = np.random.default_rng(0)
    src = rng.integers(1, 60, 3_000)
    tgt = np.minimum(src + rng.integers(0, 10, 3_000), 60)
    plan = plan_shapes(src, tgt, 1024, step=8, max_shapes=6, longest=61)
    sampler = TokenBudgetBatchSampler(src, tgt, 1024, seed=3, shapes=plan)
    expected = {plan.batch_shape(src[b].tolist(), tgt[b].tolist()) for b in sampler}
    assert sampler.batch_shapes() == expected
    assert len(expected) <= 6 < len(TokenBudgetBatchSampler(src, tgt, 1024, seed=3).batch_shapes())
