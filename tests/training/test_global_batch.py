"""Every DDP rank counts the target tokens of the whole global step from the epoch's batch list,
without asking the others: the count is what the ranks' own batches hold."""

from __future__ import annotations

import itertools

from llm_from_scratch.training.global_batch import global_target_tokens

WORLD_SIZE, FIRST, COUNT = 2, 3, 2


def test_the_global_count_is_the_sum_over_the_ranks_batches(copy_task):
    _, data, _ = copy_task
    loaders = [data.train_loader(1, rank=rank, world_size=WORLD_SIZE) for rank in range(WORLD_SIZE)]
    held = sum(
        batch.tgt_tokens
        for loader in loaders
        for batch in itertools.islice(loader, FIRST, FIRST + COUNT)
    )
    counted = [global_target_tokens(loader.batch_sampler, FIRST, COUNT) for loader in loaders]
    assert counted == [held, held]
