"""Search on a CUDA GPU finds what it finds on the CPU (skipped without a GPU; run on one with
`pytest tests/decoding/test_cuda.py tests/training/test_cuda.py`)."""

from __future__ import annotations

import copy

import pytest
import torch

from llm_from_scratch.decoding.beam import beam_search
from llm_from_scratch.decoding.common import Hypothesis
from llm_from_scratch.decoding.greedy import greedy_search

from .builders import pad_batch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

LIMITS = {"max_len_a": 1.0, "max_len_b": 5}


def searched(model, tok, sources, device: str, beam_size: int, ban: int) -> list[Hypothesis]:
    src, src_mask = pad_batch(sources, tok.pad_id)
    model = copy.deepcopy(model).to(device)
    src, src_mask = src.to(device), src_mask.to(device)
    if beam_size == 1:
        return greedy_search(model, src, src_mask, tok, no_repeat_ngram_size=ban, **LIMITS)
    found = beam_search(
        model,
        src,
        src_mask,
        tok,
        beam_size=beam_size,
        alpha=0.6,
        no_repeat_ngram_size=ban,
        **LIMITS,
    )
    return [nbest[0] for nbest in found]


@pytest.mark.parametrize("ban", [0, 3])
@pytest.mark.parametrize("beam_size", [1, 4])
def test_search_on_cuda_equals_search_on_cpu(copy_model, tokenizer, sources, beam_size, ban):
    # The copy model computes in float64, so the devices agree to far below any score gap.
    on_cpu = searched(copy_model, tokenizer, sources, "cpu", beam_size, ban)
    on_cuda = searched(copy_model, tokenizer, sources, "cuda", beam_size, ban)
    assert [h.tokens for h in on_cuda] == [h.tokens for h in on_cpu]
    assert [h.hit_max_len for h in on_cuda] == [h.hit_max_len for h in on_cpu]
    assert [h.score for h in on_cuda] == pytest.approx([h.score for h in on_cpu], rel=1e-9)
