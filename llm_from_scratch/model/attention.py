"""Multi-head scaled dot-product attention, one module for self- and cross-attention.

Masks follow the convention of `llm_from_scratch.model.masks`: bool, True = may attend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from llm_from_scratch.model.cache import KeyValueCache
from llm_from_scratch.model.masks import causal_mask


class MultiHeadAttention(nn.Module):
    """Attention(Q, K, V) = softmax(QKᵀ/√d_head)V in `n_heads` subspaces, then one projection.

    The query, key and value projections are one (3·d_model, d_model) matrix, laid out as
    `nn.MultiheadAttention`'s `in_proj_weight`: self-attention projects its input with a single
    matmul; cross-attention uses the first third on the decoder states and the other two thirds on
    the encoder output.

    No dropout inside: as in the paper, dropout acts on the sublayer's output (see `Residual`).
    The kernel is `attend`'s choice.
    """

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        mask: Tensor | None = None,
        is_causal: bool = False,
        cache: KeyValueCache | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from `x` (batch, tgt_len, d_model) to itself, or to `memory` when given.

        mask: bool, broadcastable to (batch, heads, tgt_len, src_len), True = may attend.
        is_causal: each position attends only to itself and earlier ones (no `mask` then).
        cache: self-attention appends the new keys/values to it; cross-attention fills it on the
            first call and reuses it afterwards, ignoring `memory`.
        need_weights: also return the attention weights (batch, heads, tgt_len, src_len).
        """
        if memory is None:
            q, k, v = self._split_heads(self.in_proj(x)).unbind(0)
            if cache is not None:
                k, v = cache.append(k, v)
        else:
            d = self.d_model
            q = self._split_heads(F.linear(x, self.in_proj.weight[:d], self.in_proj.bias[:d]))[0]
            if cache is not None and cache.key is not None and cache.value is not None:
                k, v = cache.key, cache.value
            else:
                kv = F.linear(memory, self.in_proj.weight[d:], self.in_proj.bias[d:])
                k, v = self._split_heads(kv).unbind(0)
                if cache is not None:
                    cache.append(k, v)

        out, weights = attend(q, k, v, mask, is_causal, need_weights)
        batch, _, tgt_len, _ = out.shape
        out = out.transpose(1, 2).reshape(batch, tgt_len, self.d_model)  # (batch, tgt_len, d_model)
        return self.out_proj(out), weights

    def _split_heads(self, projected: Tensor) -> Tensor:
        """(batch, len, n·d_model) → (n, batch, heads, len, head_dim) for n stacked projections."""
        batch, length, width = projected.shape
        n = width // self.d_model
        projected = projected.view(batch, length, n, self.n_heads, self.head_dim)
        return projected.permute(2, 0, 3, 1, 4)  # (n, batch, heads, len, head_dim)


# Scores per (batch, head) up to which the explicit path beats SDPA's fused CPU kernel, by dtype
# (scripts/bench_attention.py): at translation lengths the fused kernel's blocked loops and their
# bookkeeping cost more than attention's few FLOPs, most of all in bf16; longer sequences are
# better served by a kernel that never holds the whole (tgt_len, src_len) matrix.
CPU_EXPLICIT_MAX_SCORES = {torch.bfloat16: 256 * 256, torch.float32: 64 * 64}


def attend(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
    need_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """softmax(QKᵀ/√d_head)V with the kernel that is fast for these shapes on this device.

    q (batch, heads, tgt_len, head_dim), k and v (batch, heads, src_len, head_dim); `mask` and
    `is_causal` as in `MultiHeadAttention.forward`. Returns the output (batch, heads, tgt_len,
    head_dim) and, with `need_weights`, the weights (batch, heads, tgt_len, src_len), else None.
    """
    most_scores = CPU_EXPLICIT_MAX_SCORES.get(q.dtype, 0) if q.device.type == "cpu" else 0
    explicit = q.size(-2) * k.size(-2) <= most_scores
    if need_weights or explicit:
        out, weights = explicit_attention(q, k, v, mask, is_causal)
        return out, weights if need_weights else None
    # On CUDA without cuDNN's kernel, which `device.resolve_device` turns off for the process.
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal), None


def explicit_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ/√d_head)V written out as two matrix products, returning the weights too.

    q (batch, heads, tgt_len, head_dim), k and v (batch, heads, src_len, head_dim). Returns the
    output (batch, heads, tgt_len, head_dim) and the weights (batch, heads, tgt_len, src_len), in
    v's dtype. The softmax runs in fp32 whatever the inputs, as SDPA's kernels do.
    """
    scores = (q * (1 / math.sqrt(q.size(-1)))) @ k.transpose(-2, -1)  # (batch, heads, tgt, src)
    if is_causal:
        mask = causal_mask(q.size(-2), k.size(-2), device=q.device)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores.float(), dim=-1).to(v.dtype)
    return weights @ v, weights
