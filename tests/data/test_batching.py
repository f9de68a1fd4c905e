from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_from_scratch.data.batching import TokenBudgetBatchSampler, batch_cost, pack
from llm_from_scratch.errors import UserError
from tests.reference.batching import reference_pack

lengths = st.lists(st.integers(1, 30), min_size=1, max_size=300)


def sampler(src, tgt, budget=128, **options):
    return TokenBudgetBatchSampler(
        src, tgt, budget, pool_size=options.pop("pool_size", 50), **options
    )


def random_lengths(count, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(1, 40, count), rng.integers(1, 40, count)


@settings(max_examples=60, deadline=None)
@given(src=lengths, data=st.data(), budget=st.integers(64, 400), epoch=st.integers(0, 5))
def test_budget_is_never_exceeded_and_every_example_comes_once(src, data, budget, epoch):
    tgt = data.draw(st.lists(st.integers(1, 30), min_size=len(src), max_size=len(src)))
    batches = sampler(src, tgt, budget, seed=7)
    batches.set_epoch(epoch)
    seen = []
    for batch in batches:
        assert batch_cost([src[i] for i in batch], [tgt[i] for i in batch]) <= budget
        seen += batch
    assert sorted(seen) == list(range(len(src)))


def test_same_seed_and_epoch_give_the_same_batches_and_others_do_not():
    src, tgt = random_lengths(500)
    first = list(sampler(src, tgt, seed=3))
    assert list(sampler(src, tgt, seed=3)) == first
    assert list(sampler(src, tgt, seed=4)) != first
    next_epoch = sampler(src, tgt, seed=3)
    next_epoch.set_epoch(1)
    assert list(next_epoch) != first


def test_batches_are_length_bucketed():
    src, tgt = random_lengths(2000)
    batches = list(sampler(src, tgt, budget=512, pool_size=2000))
    real = sum(src) + sum(tgt) + 2 * len(src)
    padded = sum(batch_cost(src[b], tgt[b]) for b in batches)
    assert 1 - real / padded < 0.15  # unsorted batches of this mix waste about half


@pytest.mark.parametrize("start", [0, 1, 7, 20])
def test_resuming_from_batch_k_gives_exactly_the_remaining_batches(start):
    src, tgt = random_lengths(400)
    full = sampler(src, tgt, seed=5)
    full.set_epoch(2)
    resumed = sampler(src, tgt, seed=5)
    resumed.set_epoch(2, start_batch=start)
    assert list(resumed) == list(full)[start:]
    assert len(resumed) == len(list(full)) - start


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_ddp_ranks_get_disjoint_batches_of_equal_count_covering_the_epoch(world_size):
    src, tgt = random_lengths(301)
    per_rank = []
    for rank in range(world_size):
        rank_sampler = sampler(src, tgt, seed=9, rank=rank, world_size=world_size)
        rank_sampler.set_epoch(1)
        per_rank.append(list(rank_sampler))
        assert len(rank_sampler) == len(per_rank[-1])
    assert len({len(batches) for batches in per_rank}) == 1
    examples = [i for batches in per_rank for batch in batches for i in batch]
    assert sorted(examples) == list(range(len(src)))


def test_too_few_batches_for_the_ranks_is_a_clear_error():
    single = sampler([30], [30], world_size=2)
    with pytest.raises(UserError, match="among 2 ranks"):
        list(single)


def test_a_pair_over_the_budget_gets_a_batch_of_its_own_rather_than_vanishing():
    batches = list(sampler([2, 100, 3], [2, 100, 3], budget=64, shuffle=False))
    assert [1] in batches
    assert sorted(i for b in batches for i in b) == [0, 1, 2]


def test_evaluation_order_is_sorted_by_length_and_not_shuffled():
    src, tgt = random_lengths(100)
    batches = list(sampler(src, tgt, shuffle=False))
    order = [i for batch in batches for i in batch]
    assert list(np.asarray(tgt)[order]) == sorted(tgt)


@settings(max_examples=200, deadline=None)
@given(
    lengths=st.lists(st.tuples(st.integers(0, 80), st.integers(0, 80)), max_size=300),
    budget=st.integers(1, 600),
    data=st.data(),
)
def test_pack_cuts_exactly_as_the_pair_by_pair_reference(lengths, budget, data):
    src = np.array([s for s, _ in lengths], dtype=np.int64)
    tgt = np.array([t for _, t in lengths], dtype=np.int64)
    order = data.draw(st.permutations(range(len(lengths))))
    assert pack(order, src, tgt, budget) == reference_pack(order, src, tgt, budget)


def test_pack_cuts_a_real_corpus_slice_exactly_as_the_reference():
    """The everyday corpus's lengths (English words, Japanese characters), forty times over,
    sorted as the sampler sorts a pool; scripts/bench_batching.py checks kyoto_wiki's too."""
    corpus = Path(__file__).parent / "everyday"
    english = (corpus / "everyday.en").read_text().splitlines()
    japanese = (corpus / "everyday.ja").read_text().splitlines()
    src = np.array([len(line.split()) for line in english] * 40)
    tgt = np.array([len(line) for line in japanese] * 40)
    order = np.random.default_rng(0).permutation(len(src))
    order = order[np.lexsort((src[order], tgt[order]))]
    for budget in (64, 4096, 65536):
        assert pack(order, src, tgt, budget) == reference_pack(order, src, tgt, budget)
