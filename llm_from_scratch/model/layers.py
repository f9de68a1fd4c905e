"""The building blocks of the Transformer, in the order data flows through them: embeddings with
positions, the residual-and-norm wrapper, the feed-forward network, then encoder and decoder layers.

Masks follow the convention of `llm_from_scratch.model.masks`: bool, True = may attend.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from llm_from_scratch.model.attention import MultiHeadAttention
from llm_from_scratch.model.cache import KeyValueCache
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.dropout import Dropout


def sinusoidal_positions(max_positions: int, d_model: int) -> Tensor:
    """(max_positions, d_model): PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(...)."""
    position = torch.arange(max_positions, dtype=torch.float64)[:, None]
    frequency = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float64) * -(math.log(1e4) / d_model)
    )
    table = torch.empty(max_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table.float()


class Embedding(nn.Module):
    """Token embedding scaled by √d_model, plus the sinusoidal encoding of each position.

    The table is initialized N(0, 1/d_model) so that, after the √d_model scale, token vectors have
    unit variance like the positional encoding; the tied output projection then starts with logits
    of unit scale.
    """

    def __init__(self, vocab_size: int, d_model: int, max_positions: int, dropout: float) -> None:
        super().__init__()
        self.token = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model)
        # Recomputable, so not saved in checkpoints.
        self.register_buffer(
            "positions", sinusoidal_positions(max_positions, d_model), persistent=False
        )
        self.dropout = Dropout(dropout)

    def forward(self, tokens: Tensor, start: int = 0) -> Tensor:
        """tokens (batch, len) at positions start, start+1, ... → (batch, len, d_model)."""
        end = start + tokens.size(1)
        if end > self.positions.size(0):
            raise ValueError(
                f"sequence reaches position {end}, beyond model.max_positions="
                f"{self.positions.size(0)}; split the input or raise max_positions"
            )
        return self.dropout(self.token(tokens) * self.scale + self.positions[start:end])


class Residual(nn.Module):
    """x + Dropout(sublayer(·)) with the sublayer's LayerNorm in one of two places.

    Pre-LN (`norm_first`, the default) normalizes the sublayer's input and leaves the residual
    stream untouched, which trains stably without a long warm-up. Post-LN (the paper) normalizes
    the sum. Use as `x = residual(x, sublayer(residual.sublayer_input(x)))`.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)
        self.norm_first = norm_first

    def sublayer_input(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.norm_first else x

    def forward(self, x: Tensor, sublayer_output: Tensor) -> Tensor:
        x = self.dropout.add(x, sublayer_output)
        return x if self.norm_first else self.norm(x)


class FeedForward(nn.Module):
    """Position-wise Linear(d_model → d_ff) → ReLU/GELU → Linear(d_ff → d_model).

    Its dropout is the one on its output, applied by `Residual`, as in the paper.
    """

    def __init__(self, d_model: int, d_ff: int, activation: str) -> None:
        super().__init__()
        self.expand = nn.Linear(d_model, d_ff)
        self.activation = nn.ReLU() if activation == "relu" else nn.GELU()
        self.contract = nn.Linear(d_ff, d_model)

    def forward(self, x: Tensor) -> Tensor:
        return self.contract(self.activation(self.expand(x)))


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d_model, dropout, norm_first = cfg.d_model, cfg.dropout, cfg.norm_first
        self.self_attn = MultiHeadAttention(d_model, cfg.n_heads)
        self.self_attn_residual = Residual(d_model, dropout, norm_first)
        self.feed_forward = FeedForward(d_model, cfg.d_ff, cfg.activation)
        self.feed_forward_residual = Residual(d_model, dropout, norm_first)

    def forward(self, x: Tensor, src_mask: Tensor) -> Tensor:
        """x (batch, src_len, d_model); src_mask broadcasts to (batch, heads, src_len, src_len)."""
        attended, _ = self.self_attn(self.self_attn_residual.sublayer_input(x), mask=src_mask)
        x = self.self_attn_residual(x, attended)
        return self.feed_forward_residual(
            x, self.feed_forward(self.feed_forward_residual.sublayer_input(x))
        )


class DecoderLayer(nn.Module):
    """Causal self-attention over the target, cross-attention to the source, feed-forward."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d_model, dropout, norm_first = cfg.d_model, cfg.dropout, cfg.norm_first
        self.self_attn = MultiHeadAttention(d_model, cfg.n_heads)
        self.self_attn_residual = Residual(d_model, dropout, norm_first)
        self.cross_attn = MultiHeadAttention(d_model, cfg.n_heads)
        self.cross_attn_residual = Residual(d_model, dropout, norm_first)
        self.feed_forward = FeedForward(d_model, cfg.d_ff, cfg.activation)
        self.feed_forward_residual = Residual(d_model, dropout, norm_first)

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        memory_mask: Tensor,
        self_mask: Tensor | None = None,
        is_causal: bool = False,
        self_cache: KeyValueCache | None = None,
        cross_cache: KeyValueCache | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """x (batch, tgt_len, d_model), memory (batch, src_len, d_model).

        Returns the new x and, with `need_weights`, the cross-attention weights
        (batch, heads, tgt_len, src_len).
        """
        attended, _ = self.self_attn(
            self.self_attn_residual.sublayer_input(x),
            mask=self_mask,
            is_causal=is_causal,
            cache=self_cache,
        )
        x = self.self_attn_residual(x, attended)
        attended, cross_weights = self.cross_attn(
            self.cross_attn_residual.sublayer_input(x),
            memory,
            mask=memory_mask,
            cache=cross_cache,
            need_weights=need_weights,
        )
        x = self.cross_attn_residual(x, attended)
        x = self.feed_forward_residual(
            x, self.feed_forward(self.feed_forward_residual.sublayer_input(x))
        )
        return x, cross_weights
