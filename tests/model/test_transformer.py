"""Behaviour of Seq2SeqTransformer: invariances, tying, golden values, autocast, weights."""

from __future__ import annotations

import pytest
import torch

from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.transformer import Seq2SeqTransformer

from .builders import PAD_ID, SRC_VOCAB, TGT_VOCAB, build_model, padded_batch


@pytest.mark.parametrize("norm_first", [True, False])
def test_future_target_tokens_do_not_change_earlier_positions(norm_first: bool) -> None:
    model = build_model(norm_first=norm_first)
    src, src_mask = padded_batch([6, 3], SRC_VOCAB)
    tgt, _ = padded_batch([8, 8], TGT_VOCAB, seed=2)
    changed = tgt.clone()
    changed[:, 5:] = torch.randint(1, TGT_VOCAB, (2, 3), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        before, after = model(src, src_mask, tgt), model(src, src_mask, changed)
    torch.testing.assert_close(after[:, :5], before[:, :5], atol=0, rtol=0)
    assert (after[:, 5:] - before[:, 5:]).abs().max() > 1e-3  # the change does reach later ones


@pytest.mark.parametrize("norm_first", [True, False])
def test_extra_source_padding_changes_nothing(norm_first: bool) -> None:
    model = build_model(norm_first=norm_first)
    src, src_mask = padded_batch([6, 3], SRC_VOCAB)
    tgt, _ = padded_batch([5, 5], TGT_VOCAB, seed=2)
    padded_src = torch.cat([src, torch.full((2, 4), PAD_ID)], dim=1)
    padded_mask = torch.cat([src_mask, torch.zeros(2, 4, dtype=torch.bool)], dim=1)
    with torch.no_grad():
        expected = model(src, src_mask, tgt)
        torch.testing.assert_close(model(padded_src, padded_mask, tgt), expected)
        # The short sentence alone, without the batch's padding at all.
        alone = model(src[1:, :3], src_mask[1:, :3], tgt[1:])
    torch.testing.assert_close(alone, expected[1:], atol=1e-5, rtol=1e-5)


def test_default_source_mask_comes_from_pad_id() -> None:
    model = build_model()
    src, src_mask = padded_batch([6, 3], SRC_VOCAB)
    with torch.no_grad():
        torch.testing.assert_close(model.encode(src), model.encode(src, src_mask))


def test_golden_logits_from_fixed_seed() -> None:
    # Printed once by running this body (torch 2.13 CPU) and rounded to 6 decimals; they pin the
    # initialization scheme and the whole forward computation.
    model = build_model(seed=0)
    src, src_mask = padded_batch([6, 3], SRC_VOCAB, seed=1)
    tgt, _ = padded_batch([5, 5], TGT_VOCAB, seed=2)
    with torch.no_grad():
        logits = model(src, src_mask, tgt)
    assert [logits.mean().item(), logits.std().item()] == pytest.approx(
        [0.031645, 0.990354], abs=1e-5
    )
    assert logits[0, 0, :3].tolist() == pytest.approx([1.735978, -0.414225, 0.63908], abs=1e-5)


def expected_parameters(cfg: ModelConfig, src_vocab: int, tgt_vocab: int, shared: bool) -> int:
    d, ff = cfg.d_model, cfg.d_ff
    attention = 4 * d * d + 4 * d  # fused q/k/v and output projections, with biases
    feed_forward = 2 * d * ff + ff + d
    norm = 2 * d
    encoder = cfg.n_encoder_layers * (attention + feed_forward + 2 * norm) + norm
    decoder = cfg.n_decoder_layers * (2 * attention + feed_forward + 3 * norm) + norm
    embeddings = src_vocab * d if shared else (src_vocab + tgt_vocab) * d
    return encoder + decoder + embeddings  # the output projection is tied


@pytest.mark.parametrize("shared_vocab", [False, True])
def test_embedding_tying_and_parameter_count(shared_vocab: bool) -> None:
    model = build_model(shared_vocab=shared_vocab)
    decoder_table = model.decoder.embedding.token.weight
    assert model.output_proj.weight is decoder_table
    assert (model.encoder.embedding.token.weight is decoder_table) == shared_vocab
    tgt_vocab = SRC_VOCAB if shared_vocab else TGT_VOCAB
    expected = expected_parameters(model.cfg, SRC_VOCAB, tgt_vocab, shared_vocab)
    assert model.num_parameters() == expected


def test_untied_output_projection_is_separate() -> None:
    model = build_model(tie_embeddings=False)
    assert model.output_proj.weight is not model.decoder.embedding.token.weight
    tied = expected_parameters(model.cfg, SRC_VOCAB, TGT_VOCAB, shared=False)
    assert model.num_parameters() == tied + TGT_VOCAB * model.cfg.d_model


def test_every_parameter_gets_a_gradient() -> None:
    # An unused parameter would stall DistributedDataParallel and hint at a wiring mistake.
    model = build_model().train()
    src, src_mask = padded_batch([6, 3], SRC_VOCAB)
    tgt, _ = padded_batch([5, 5], TGT_VOCAB, seed=2)
    model(src, src_mask, tgt).logsumexp(-1).sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_bf16_autocast_is_close_to_float32() -> None:
    model = build_model()
    src, src_mask = padded_batch([6, 3], SRC_VOCAB)
    tgt, _ = padded_batch([5, 5], TGT_VOCAB, seed=2)
    with torch.no_grad():
        full = model(src, src_mask, tgt)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            memory = model.encode(src, src_mask)
            low = model.decode(tgt, memory, src_mask)
            cache = model.new_cache()
            step = model.decode(tgt[:, :1], memory, src_mask, cache=cache)
    assert isinstance(low, torch.Tensor) and isinstance(step, torch.Tensor)
    assert low.dtype == torch.bfloat16
    torch.testing.assert_close(low.float(), full, atol=0.1, rtol=0.05)
    torch.testing.assert_close(step.float(), low[:, :1].float(), atol=0.1, rtol=0.05)


def test_cross_attention_weights_on_request() -> None:
    model = build_model()
    src, src_mask = padded_batch([6, 3], SRC_VOCAB)
    tgt, _ = padded_batch([5, 5], TGT_VOCAB, seed=2)
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        weights = model.cross_attention(tgt, memory, src_mask)
        # the unfused path that yields the weights computes what the fused kernels do
        hidden, _ = model.decoder(tgt, memory, src_mask, need_weights=True)
        plain, _ = model.decoder(tgt, memory, src_mask)
    torch.testing.assert_close(hidden, plain, atol=1e-5, rtol=1e-5)
    cfg = model.cfg
    assert weights.shape == (cfg.n_decoder_layers, 2, cfg.n_heads, 5, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    assert bool((weights[:, 1, :, :, 3:] == 0).all())  # nothing on the short source's padding


def test_sequence_beyond_max_positions_is_refused() -> None:
    model = build_model(max_positions=8)
    src, src_mask = padded_batch([9], SRC_VOCAB)
    with pytest.raises(ValueError, match=r"position 9, beyond model\.max_positions=8"):
        model.encode(src, src_mask)


def test_shared_vocab_needs_equal_sizes() -> None:
    with pytest.raises(ValueError, match="shared_vocab"):
        Seq2SeqTransformer(ModelConfig(), 100, 120, PAD_ID, shared_vocab=True)
