from itertools import chain

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_from_scratch.data.batch import Collator
from llm_from_scratch.data.batching import TokenBudgetBatchSampler, batch_cost
from llm_from_scratch.data.config import LoadingConfig
from llm_from_scratch.data.shapes import ShapePlan, plan_shapes, round_up
from llm_from_scratch.errors import ConfigError


def skewed_lengths(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Sentence-like lengths: mostly short, a long tail up to the cleaning limit of 120."""
    rng = np.random.default_rng(seed)
    src = np.minimum(rng.lognormal(3.2, 0.6, count).astype(np.int64) + 1, 120)
    tgt = np.minimum((src * rng.uniform(0.7, 1.5, count)).astype(np.int64) + 1, 120)
    return src, tgt


def test_lengths_round_up_to_multiples_of_the_step_then_coarser():
    lengths = np.array([1, 8, 9, 127, 128, 129, 144, 145, 256, 257, 300])
    assert round_up(lengths, 8).tolist() == [8, 8, 16, 128, 128, 144, 144, 160, 256, 288, 320]
    assert round_up(np.array([3, 4, 5, 64, 65]), 4).tolist() == [4, 4, 8, 64, 72]


def test_an_epoch_of_a_skewed_distribution_takes_32_shapes_and_9_percent_more_padding():
    src, tgt = skewed_lengths(20_000)
    plan = plan_shapes(src, tgt, 4096, step=8, max_shapes=32, longest=121)
    assert len(plan.shapes) == 32
    assert plan.shapes[:3] == ((8, 8), (16, 16), (16, 24))
    assert plan.shapes[-1] == (128, 128)  # the cell of the longest pair cleaning keeps
    dynamic = TokenBudgetBatchSampler(src, tgt, 4096, seed=1)
    dynamic_padded = sum(batch_cost(src[batch], tgt[batch]) for batch in dynamic)
    shapes = [
        plan.batch_shape(src[batch].tolist(), tgt[batch].tolist())
        for batch in TokenBudgetBatchSampler(src, tgt, 4096, seed=1, shapes=plan)
    ]
    static_padded = sum(rows * (src_len + tgt_len) for rows, src_len, tgt_len in shapes)
    assert (len(list(dynamic)), len(shapes), len(set(shapes))) == (347, 376, 32)
    # Filler rows are 32 part-filled batches of 376 here, a far smaller share of a real corpus.
    assert round(static_padded / dynamic_padded, 3) == 1.090


def test_fewer_shapes_cost_more_padding_and_every_pair_still_has_one():
    src, tgt = skewed_lengths(5_000, seed=1)
    padded = []
    for max_shapes in (64, 32, 8, 1):
        plan = plan_shapes(src, tgt, 4096, step=8, max_shapes=max_shapes, longest=121)
        assert len(plan.shapes) <= max_shapes
        shape_of = plan.assign(src, tgt)
        assert (shape_of >= 0).all()
        padded.append(np.array(plan.shapes)[shape_of].sum())
    assert padded == sorted(padded)
    assert plan.shapes == ((128, 128),)


def test_each_pair_goes_to_the_cheapest_shape_that_holds_it():
    plan = ShapePlan(((16, 16), (16, 32), (32, 16), (48, 48)), batch_tokens=256)
    src = np.array([5, 15, 16, 20, 15, 40])
    tgt = np.array([5, 15, 5, 5, 31, 10])
    assert plan.assign(src, tgt).tolist() == [0, 0, 2, 2, 1, 3]
    assert plan.assign(np.array([48]), np.array([1])).tolist() == [-1]
    assert [plan.rows(shape) for shape in range(4)] == [8, 5, 5, 2]


def epoch_shapes(plan, sampler, src, tgt):
    """Each batch's (rows, source length, target length), checked to hold its pairs."""
    shapes = []
    for batch in sampler:
        rows, src_len, tgt_len = plan.batch_shape(src[batch].tolist(), tgt[batch].tolist())
        assert len(batch) <= rows
        assert rows * (src_len + tgt_len) <= max(plan.batch_tokens, src_len + tgt_len)
        shapes.append((rows, src_len, tgt_len))
    return shapes


@settings(max_examples=15, deadline=None)
@given(
    src=st.lists(st.integers(1, 60), min_size=1, max_size=200),
    data=st.data(),
    budget=st.integers(130, 2000),
)
def test_static_batches_take_fixed_shapes_and_cover_every_example_once(src, data, budget):
    tgt = data.draw(st.lists(st.integers(1, 60), min_size=len(src), max_size=len(src)))
    src, tgt = np.array(src), np.array(tgt)
    plan = plan_shapes(src, tgt, budget, step=8, max_shapes=6, longest=61)
    sampler = TokenBudgetBatchSampler(src, tgt, budget, seed=3, shapes=plan)
    assert len(set(epoch_shapes(plan, sampler, src, tgt))) <= 6
    assert sorted(chain.from_iterable(sampler)) == list(range(len(src)))


def test_ddp_ranks_share_static_batches_equally_keeping_their_shapes():
    src, tgt = skewed_lengths(500, seed=2)
    plan = plan_shapes(src, tgt, 1024, step=8, max_shapes=8, longest=121)
    ranks = [
        TokenBudgetBatchSampler(src, tgt, 1024, seed=3, rank=rank, world_size=3, shapes=plan)
        for rank in range(3)
    ]
    shapes = [epoch_shapes(plan, sampler, src, tgt) for sampler in ranks]
    assert len({len(rank) for rank in shapes}) == 1
    assert len(set(chain.from_iterable(shapes))) <= 8
    assert sorted(chain.from_iterable(chain.from_iterable(ranks))) == list(range(500))


def test_a_short_batch_is_filled_with_rows_that_carry_no_label(word_tokenizer):
    tok = word_tokenizer
    plan = ShapePlan(((8, 8),), batch_tokens=64)  # 4 rows of 8 + 8
    rows = [
        {"src_ids": [10, 11], "tgt_ids": [20, 21, 22], "index": 4},
        {"src_ids": [12], "tgt_ids": [23], "index": 0},
    ]
    batch = Collator(tok, tok, shapes=plan)(rows)
    pad_id, bos, eos = tok.pad_id, tok.bos_id, tok.eos_id
    assert batch.src.shape == batch.tgt_in.shape == (4, 8)
    assert batch.src[2:].tolist() == [[eos] + [pad_id] * 7] * 2
    assert batch.src_mask[2:].tolist() == [[True] + [False] * 7] * 2
    assert batch.tgt_in[2:].tolist() == [[bos] + [pad_id] * 7] * 2
    assert batch.tgt_out[2:].tolist() == [[pad_id] * 8] * 2
    assert not batch.tgt_mask[2:].any()
    assert batch.indices.tolist() == [4, 0, -1, -1]
    assert (batch.filler_rows, batch.src_tokens, batch.tgt_tokens) == (2, 5, 6)
    assert batch.tgt_out[0].tolist() == [20, 21, 22, eos] + [pad_id] * 4


def test_a_batch_the_plan_did_not_cut_is_refused(word_tokenizer):
    plan = ShapePlan(((8, 8),), batch_tokens=16)  # one row
    rows = [{"src_ids": [1], "tgt_ids": [1], "index": i} for i in range(2)]
    with pytest.raises(ValueError, match="fit no static shape"):
        Collator(word_tokenizer, word_tokenizer, shapes=plan)(rows)


def test_static_shapes_are_on_for_cuda_only_by_default():
    auto = LoadingConfig()
    assert auto.uses_static_shapes(torch.device("cuda"))
    assert not auto.uses_static_shapes(torch.device("cpu"))
    assert LoadingConfig(static_shapes="True").uses_static_shapes(torch.device("cpu"))
    assert not LoadingConfig(static_shapes="false").uses_static_shapes(torch.device("cuda"))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"static_shapes": "yes"}, "data.loading.static_shapes"),
        ({"shape_step": 0}, "data.loading.shape_step"),
        ({"max_shapes": 0}, "data.loading.max_shapes"),
    ],
)
def test_static_shape_settings_are_checked(settings, message):
    with pytest.raises(ConfigError, match=message):
        LoadingConfig(**settings)
