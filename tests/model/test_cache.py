"""Incremental decoding with DecoderCache equals decoding the whole prefix at once."""

from __future__ import annotations

import pytest
import torch

from llm_from_scratch.model.transformer import Seq2SeqTransformer

from .builders import SRC_VOCAB, TGT_VOCAB, build_model, padded_batch


def inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    src, src_mask = padded_batch([7, 4, 5], SRC_VOCAB, seed=1)
    tgt, _ = padded_batch([6, 6, 6], TGT_VOCAB, seed=2)
    return src, src_mask, tgt


def decode_in_chunks(
    model: Seq2SeqTransformer,
    src: torch.Tensor,
    src_mask: torch.Tensor,
    tgt: torch.Tensor,
    sizes: list[int],
) -> torch.Tensor:
    memory = model.encode(src, src_mask)
    cache = model.new_cache()
    logits, start = [], 0
    for size in sizes:
        assert cache.length == start
        logits.append(model.decode(tgt[:, start : start + size], memory, src_mask, cache=cache))
        start += size
    assert cache.length == start
    return torch.cat(logits, dim=1)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("sizes", [[1] * 6, [3, 1, 2]], ids=["token-by-token", "chunks"])
@torch.no_grad()
def test_cached_decoding_equals_full_decoding(norm_first: bool, sizes: list[int]) -> None:
    model = build_model(norm_first=norm_first)
    src, src_mask, tgt = inputs()
    full = model(src, src_mask, tgt)
    stepped = decode_in_chunks(model, src, src_mask, tgt, sizes)
    assert (stepped - full).abs().max().item() < 1e-5


@torch.no_grad()
def test_cross_attention_keys_are_computed_once() -> None:
    model = build_model()
    src, src_mask, tgt = inputs()
    memory = model.encode(src, src_mask)
    cache = model.new_cache()
    model.decode(tgt[:, :1], memory, src_mask, cache=cache)
    # Later steps must reuse the cached cross-attention K/V, not recompute them from memory.
    step = model.decode(tgt[:, 1:2], torch.zeros_like(memory), src_mask, cache=cache)
    torch.testing.assert_close(step, model(src, src_mask, tgt[:, :2])[:, 1:], atol=1e-5, rtol=0)


@torch.no_grad()
def test_reorder_follows_beam_indices() -> None:
    model = build_model()
    src, src_mask, tgt = inputs()
    memory = model.encode(src, src_mask)
    cache = model.new_cache()
    model.decode(tgt[:, :3], memory, src_mask, cache=cache)

    # Expand three sources into five hypotheses, in a new order, as a beam search step would.
    beams = torch.tensor([2, 0, 0, 1, 2])
    cache.reorder(beams, cross_indices=beams)
    next_tokens = torch.tensor([[5], [6], [7], [8], [9]])
    step = model.decode(next_tokens, memory[beams], src_mask[beams], cache=cache)

    prefixes = torch.cat([tgt[beams, :3], next_tokens], dim=1)
    full = model(src[beams], src_mask[beams], prefixes)
    assert cache.length == 4
    assert (step[:, 0] - full[:, -1]).abs().max().item() < 1e-5


@torch.no_grad()
def test_rows_of_one_memory_reorder_without_their_cross_attention() -> None:
    # A beam search's beams of one sentence: equal memory rows, self-attention rows that differ.
    model = build_model()
    src, src_mask, tgt = inputs()
    beams = torch.tensor([1, 1, 1])
    memory = model.encode(src, src_mask)[beams]
    cache = model.new_cache()
    model.decode(tgt[:, :3], memory, src_mask[beams], cache=cache)

    parents = torch.tensor([2, 0, 2])
    cache.reorder(parents)  # the cross-attention rows stay as they are
    next_tokens = torch.tensor([[5], [6], [7]])
    step = model.decode(next_tokens, memory, src_mask[beams], cache=cache)

    full = model(src[beams], src_mask[beams], torch.cat([tgt[parents, :3], next_tokens], dim=1))
    assert (step[:, 0] - full[:, -1]).abs().max().item() < 1e-5


def test_new_cache_is_empty() -> None:
    model = build_model()
    cache = model.new_cache()
    assert cache.length == 0
    assert len(cache.self_attention) == model.cfg.n_decoder_layers
    cache.reorder(torch.tensor([0, 0]))  # nothing cached yet: a no-op, not an error
    assert cache.length == 0
