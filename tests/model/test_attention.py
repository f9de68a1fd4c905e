"""MultiHeadAttention against softmax(QKᵀ/√d)V written out with its own weights, and each
attention kernel against SDPA's math backend, forward and backward."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from llm_from_scratch.model.attention import (
    CPU_EXPLICIT_MAX_SCORES,
    MultiHeadAttention,
    attend,
    explicit_attention,
)
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


def sdpa_math(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **masks) -> torch.Tensor:
    """The reference: SDPA's unfused math backend (which computes reduced precision in fp32)."""
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, **masks)


def explicit_output(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **masks) -> torch.Tensor:
    return explicit_attention(q, k, v, masks.get("attn_mask"), masks.get("is_causal", False))[0]


def chosen_output(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **masks) -> torch.Tensor:
    return attend(q, k, v, masks.get("attn_mask"), masks.get("is_causal", False))[0]


TOLERANCES = {
    torch.float32: {"atol": 1e-5, "rtol": 1e-4},
    torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2},
}


@pytest.mark.parametrize("path", [explicit_output, chosen_output], ids=["explicit", "chosen"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("masking", ["padding", "causal", "offset_causal", "none"])
@pytest.mark.parametrize("tgt_len,src_len", [(1, 9), (7, 7), (24, 24), (5, 300)])
def test_each_path_equals_sdpa_math_forward_and_backward(
    path, dtype: torch.dtype, masking: str, tgt_len: int, src_len: int
) -> None:
    if masking == "causal" and tgt_len != src_len:
        pytest.skip("is_causal pairs a sequence with itself")
    generator = torch.Generator().manual_seed(tgt_len * 1000 + src_len)
    batch, heads = 3, 2
    q, k, v = (
        torch.randn(batch, heads, length, 16, generator=generator).to(dtype).requires_grad_()
        for length in (tgt_len, src_len, src_len)
    )
    masks: dict = {}
    if masking == "padding":  # the second and third sequences are padded
        lengths = torch.tensor([src_len, max(1, src_len - 3), max(1, src_len // 2)])
        masks["attn_mask"] = key_padding_to_attention_mask(torch.arange(src_len) < lengths[:, None])
    elif masking == "causal":
        masks["is_causal"] = True
    elif masking == "offset_causal":  # new queries after a cache, as incremental decoding has
        masks["attn_mask"] = causal_mask(tgt_len, src_len)
    out = path(q, k, v, **masks)
    upstream = torch.randn(out.shape, generator=generator).to(dtype)
    grads = torch.autograd.grad(out, (q, k, v), upstream)
    expected = sdpa_math(q, k, v, **masks)
    expected_grads = torch.autograd.grad(expected, (q, k, v), upstream)
    assert out.dtype == dtype
    torch.testing.assert_close(out, expected, **TOLERANCES[dtype])
    for grad, expected_grad in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(grad, expected_grad, **TOLERANCES[dtype])


def test_cpu_takes_the_explicit_path_at_translation_lengths_and_sdpa_beyond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fused_calls = []
    fused = F.scaled_dot_product_attention
    monkeypatch.setattr(
        F, "scaled_dot_product_attention", lambda *a, **kw: fused_calls.append(1) or fused(*a, **kw)
    )
    short = torch.randn(2, 2, 24, 8)
    _, weights = attend(short, short, short)
    assert weights is None and not fused_calls
    _, weights = attend(short, short, short, need_weights=True)
    assert weights is not None and weights.shape == (2, 2, 24, 24)
    for dtype, most_scores in CPU_EXPLICIT_MAX_SCORES.items():
        queries = torch.randn(1, 1, 100, 8, dtype=dtype)
        fitting = torch.randn(1, 1, most_scores // 100, 8, dtype=dtype)
        attend(queries, fitting, fitting)
        assert fused_calls == [], dtype
        beyond = torch.randn(1, 1, most_scores // 100 + 1, 8, dtype=dtype)
        attend(queries, beyond, beyond)
        assert fused_calls == [1], dtype
        fused_calls.clear()
