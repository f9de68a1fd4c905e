"""Attention on a CUDA GPU (skipped without one; run on one with `pytest tests/*/test_cuda.py`)."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from llm_from_scratch.model.attention import attend, explicit_attention

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_attention_on_cuda_avoids_cudnn_and_equals_the_explicit_path(dtype):
    """cuDNN plans each new shape on the host; translation lengths change every batch."""
    torch.manual_seed(0)
    q, k, v = (
        torch.randn(3, 4, length, 32, device="cuda", dtype=dtype, requires_grad=True)
        for length in (7, 11, 11)
    )
    mask = torch.arange(11, device="cuda") < torch.tensor([11, 6, 3], device="cuda")[:, None]
    mask = mask[:, None, None, :]  # (batch, 1, 1, src_len): padding
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as traced:
        out, _ = attend(q, k, v, mask)
        out.float().sum().backward()
        torch.cuda.synchronize()
    names = [event.key.lower() for event in traced.key_averages()]
    assert any("scaled_dot_product" in name for name in names)
    assert not [name for name in names if "cudnn" in name]
    expected, _ = explicit_attention(q, k, v, mask)
    tolerance = 2e-2 if dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(out, expected, atol=tolerance, rtol=tolerance)
