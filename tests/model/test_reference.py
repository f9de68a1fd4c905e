"""Logits equal torch.nn.Transformer's once our weights are copied into it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from llm_from_scratch.model import Seq2SeqTransformer
from llm_from_scratch.model.attention import MultiHeadAttention
from llm_from_scratch.model.layers import FeedForward, Residual

from .builders import SRC_VOCAB, TGT_VOCAB, build_model, padded_batch


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(ours.in_proj.weight)
    theirs.in_proj_bias.copy_(ours.in_proj.bias)
    theirs.out_proj.load_state_dict(ours.out_proj.state_dict())


def copy_feed_forward(ours: FeedForward, theirs: nn.Module) -> None:
    theirs.linear1.load_state_dict(ours.expand.state_dict())
    theirs.linear2.load_state_dict(ours.contract.state_dict())


def copy_norm(ours: Residual | nn.Module, theirs: nn.LayerNorm) -> None:
    norm = ours.norm if isinstance(ours, Residual) else ours
    theirs.load_state_dict(norm.state_dict())


@torch.no_grad()
def reference_transformer(model: Seq2SeqTransformer) -> nn.Transformer:
    cfg = model.cfg
    reference = nn.Transformer(
        d_model=cfg.d_model,
        nhead=cfg.n_heads,
        num_encoder_layers=cfg.n_encoder_layers,
        num_decoder_layers=cfg.n_decoder_layers,
        dim_feedforward=cfg.d_ff,
        dropout=0.0,
        activation=cfg.activation,
        batch_first=True,
        norm_first=cfg.norm_first,
    )
    for ours, theirs in zip(model.encoder.layers, reference.encoder.layers, strict=True):
        copy_attention(ours.self_attn, theirs.self_attn)
        copy_feed_forward(ours.feed_forward, theirs)
        copy_norm(ours.self_attn_residual, theirs.norm1)
        copy_norm(ours.feed_forward_residual, theirs.norm2)
    for ours, theirs in zip(model.decoder.layers, reference.decoder.layers, strict=True):
        copy_attention(ours.self_attn, theirs.self_attn)
        copy_attention(ours.cross_attn, theirs.multihead_attn)
        copy_feed_forward(ours.feed_forward, theirs)
        copy_norm(ours.self_attn_residual, theirs.norm1)
        copy_norm(ours.cross_attn_residual, theirs.norm2)
        copy_norm(ours.feed_forward_residual, theirs.norm3)
    if cfg.norm_first:
        copy_norm(model.encoder.final_norm, reference.encoder.norm)
        copy_norm(model.decoder.final_norm, reference.decoder.norm)
    else:
        # nn.Transformer always ends with a LayerNorm; the paper's post-LN model does not.
        reference.encoder.norm = None
        reference.decoder.norm = None
    # Training mode (with dropout 0) keeps nn.Transformer off its inference fast path, which
    # zeroes the encoder output at padded positions.
    return reference.train()


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize(
    ("norm_first", "activation"), [(False, "relu"), (True, "relu"), (False, "gelu")]
)
def test_logits_equal_nn_transformer(norm_first: bool, activation: str) -> None:
    model = build_model(norm_first=norm_first, activation=activation)
    reference = reference_transformer(model)
    src, src_mask = padded_batch([9, 4, 6], SRC_VOCAB, seed=1)
    tgt, _ = padded_batch([7, 7, 3], TGT_VOCAB, seed=2)

    with torch.no_grad():
        ours = model(src, src_mask, tgt)
        tgt_len = tgt.size(1)
        hidden = reference(
            model.encoder.embedding(src),
            model.decoder.embedding(tgt),
            # nn.Transformer's masks say True = NOT allowed: the opposite of ours.
            tgt_mask=~torch.ones(tgt_len, tgt_len, dtype=torch.bool).tril(),
            src_key_padding_mask=~src_mask,
            memory_key_padding_mask=~src_mask,
            tgt_is_causal=True,
        )
        theirs = model.output_proj(hidden)

    assert (ours - theirs).abs().max().item() < 1e-5
