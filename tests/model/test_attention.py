"""MultiHeadAttention against softmax(QKᵀ/√d)V written out with its own weights."""

from __future__ import annotations

import math

import pytest
import torch

from llm_from_scratch.model.attention import MultiHeadAttention
from llm_from_scratch.model.masks import causal_mask, key_padding_to_attention_mask

D_MODEL, N_HEADS = 24, 3
HEAD_DIM = D_MODEL // N_HEADS


def reference_attention(
    attention: MultiHeadAttention,
    x: torch.Tensor,
    memory: torch.Tensor,
    allowed: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Head by head with plain matmuls; `allowed` (batch, tgt_len, src_len), True = may attend."""
    w_q, w_k, w_v = attention.in_proj.weight.chunk(3)
    b_q, b_k, b_v = attention.in_proj.bias.chunk(3)
    q, k, v = x @ w_q.T + b_q, memory @ w_k.T + b_k, memory @ w_v.T + b_v
    heads, weights = [], []
    for head in range(N_HEADS):
        span = slice(head * HEAD_DIM, (head + 1) * HEAD_DIM)
        scores = q[..., span] @ k[..., span].transpose(1, 2) / math.sqrt(HEAD_DIM)
        probabilities = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        heads.append(probabilities @ v[..., span])
        weights.append(probabilities)
    out = torch.cat(heads, dim=-1) @ attention.out_proj.weight.T + attention.out_proj.bias
    return out, torch.stack(weights, dim=1)


@pytest.fixture
def attention() -> MultiHeadAttention:
    torch.manual_seed(0)
    module = MultiHeadAttention(D_MODEL, N_HEADS)
    torch.nn.init.normal_(module.in_proj.bias)  # nonzero biases, so their slicing is checked too
    return module.eval()


@pytest.mark.parametrize("need_weights", [False, True])
def test_cross_attention_with_padding_equals_explicit(
    attention: MultiHeadAttention, need_weights: bool
) -> None:
    x, memory = torch.randn(2, 5, D_MODEL), torch.randn(2, 7, D_MODEL)
    src_mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    out, weights = attention(
        x, memory, mask=key_padding_to_attention_mask(src_mask), need_weights=need_weights
    )
    expected, expected_weights = reference_attention(
        attention, x, memory, src_mask[:, None, :].expand(2, 5, 7)
    )
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(weights, expected_weights, atol=1e-6, rtol=1e-5)
        assert weights is not None and bool((weights[1, :, :, 4:] == 0).all())
    else:
        assert weights is None


@pytest.mark.parametrize("need_weights", [False, True])
def test_causal_self_attention_equals_explicit(
    attention: MultiHeadAttention, need_weights: bool
) -> None:
    x = torch.randn(3, 6, D_MODEL)
    out, _ = attention(x, is_causal=True, need_weights=need_weights)
    expected, _ = reference_attention(attention, x, x, causal_mask(6, 6).expand(3, 6, 6))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_causal_mask_is_bottom_right_aligned() -> None:
    # Two new queries after three cached keys: positions 3 and 4 of a 5-long sequence.
    expected = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert torch.equal(causal_mask(2, 5), expected)
    assert torch.equal(causal_mask(4, 4), torch.ones(4, 4, dtype=torch.bool).tril())
