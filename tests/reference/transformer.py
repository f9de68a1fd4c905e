"""The same encoder–decoder on `torch.nn.Transformer`: the reference that the equivalence tests
check our layers against (tests/model/test_reference.py) and that `scripts/bench_model.py`
times ours against.

It shares our embeddings (token × √d + sinusoidal positions) and a tied output projection, so the
parameter counts match exactly.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from llm_from_scratch.model.attention import MultiHeadAttention
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.layers import Embedding, FeedForward, Residual
from llm_from_scratch.model.transformer import Seq2SeqTransformer


class ReferenceSeq2Seq(nn.Module):
    """`nn.Transformer` between our embeddings and a tied output projection."""

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__()
        self.src_embedding = Embedding(src_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        self.tgt_embedding = Embedding(tgt_vocab_size, cfg.d_model, cfg.max_positions, cfg.dropout)
        self.transformer = nn.Transformer(
            d_model=cfg.d_model,
            nhead=cfg.n_heads,
            num_encoder_layers=cfg.n_encoder_layers,
            num_decoder_layers=cfg.n_decoder_layers,
            dim_feedforward=cfg.d_ff,
            dropout=cfg.dropout,
            activation=cfg.activation,
            batch_first=True,
            norm_first=cfg.norm_first,
        )
        self.output_proj = nn.Linear(cfg.d_model, tgt_vocab_size, bias=False)
        self.output_proj.weight = self.tgt_embedding.token.weight

    def forward(self, src: Tensor, src_mask: Tensor, tgt: Tensor) -> Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device)
        hidden = self.transformer(
            self.src_embedding(src),
            self.tgt_embedding(tgt),
            tgt_mask=causal,
            src_key_padding_mask=~src_mask,  # nn.Transformer: True = padding (ours: real token)
            memory_key_padding_mask=~src_mask,
            tgt_is_causal=True,
        )
        return self.output_proj(hidden)

    @classmethod
    @torch.no_grad()
    def copy_of(cls, model: Seq2SeqTransformer) -> ReferenceSeq2Seq:
        """A reference holding `model`'s weights, so that both compute the same logits (compare
        them with dropout 0)."""
        cfg = model.cfg
        reference = cls(
            cfg,
            model.encoder.embedding.token.num_embeddings,
            model.decoder.embedding.token.num_embeddings,
        )
        reference.src_embedding.load_state_dict(model.encoder.embedding.state_dict())
        reference.tgt_embedding.load_state_dict(model.decoder.embedding.state_dict())
        if model.output_proj.weight is not model.decoder.embedding.token.weight:  # untied
            reference.output_proj.weight = nn.Parameter(model.output_proj.weight.clone())
        theirs = reference.transformer
        for ours, layer in zip(model.encoder.layers, theirs.encoder.layers, strict=True):
            _copy_attention(ours.self_attn, layer.self_attn)
            _copy_feed_forward(ours.feed_forward, layer)
            _copy_norm(ours.self_attn_residual, layer.norm1)
            _copy_norm(ours.feed_forward_residual, layer.norm2)
        for ours, layer in zip(model.decoder.layers, theirs.decoder.layers, strict=True):
            _copy_attention(ours.self_attn, layer.self_attn)
            _copy_attention(ours.cross_attn, layer.multihead_attn)
            _copy_feed_forward(ours.feed_forward, layer)
            _copy_norm(ours.self_attn_residual, layer.norm1)
            _copy_norm(ours.cross_attn_residual, layer.norm2)
            _copy_norm(ours.feed_forward_residual, layer.norm3)
        if cfg.norm_first:
            _copy_norm(model.encoder.final_norm, theirs.encoder.norm)
            _copy_norm(model.decoder.final_norm, theirs.decoder.norm)
        else:
            # nn.Transformer always ends with a LayerNorm; the paper's post-LN model does not.
            theirs.encoder.norm = None
            theirs.decoder.norm = None
        return reference


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(ours.in_proj.weight)
    theirs.in_proj_bias.copy_(ours.in_proj.bias)
    theirs.out_proj.load_state_dict(ours.out_proj.state_dict())


def _copy_feed_forward(ours: FeedForward, theirs: nn.Module) -> None:
    theirs.linear1.load_state_dict(ours.expand.state_dict())
    theirs.linear2.load_state_dict(ours.contract.state_dict())


def _copy_norm(ours: Residual | nn.Module, theirs: nn.LayerNorm) -> None:
    norm = ours.norm if isinstance(ours, Residual) else ours
    theirs.load_state_dict(norm.state_dict())
