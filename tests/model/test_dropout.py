"""The CPU dropout: the keep rate in every 16-bit lane, an unbiased scale, `add` = x + dropout."""

import pytest
import torch

from llm_from_scratch.model.dropout import Dropout, keep_mask


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_keep_mask_keeps_one_minus_p_in_each_lane_and_is_unbiased(p: float) -> None:
    torch.manual_seed(0)
    mask = keep_mask(torch.Size([4001, 256]), p, torch.float32, torch.device("cpu"))
    drop_levels = round(p * 65536)
    scale = 65536 / (65536 - drop_levels)
    assert mask.unique().tolist() == [0.0, pytest.approx(scale)]
    kept = (mask != 0).double().flatten()[: 4000 * 256].view(-1, 4)
    # Each lane is one 16-bit quarter of a random word; a dead or biased quarter shows here.
    sigma = (p * (1 - p) / kept.size(0)) ** 0.5
    expected = torch.full((4,), 1 - p, dtype=torch.float64)
    assert torch.allclose(kept.mean(0), expected, atol=5 * sigma)
    assert mask.double().mean().item() == pytest.approx(1.0, abs=5 * sigma * scale)


@pytest.mark.parametrize("p", [1 / 65536, 0.1, 0.5, 65535 / 65536])
def test_keep_mask_is_the_threshold_comparison_on_the_same_draws(p: float) -> None:
    # The mask is built with arithmetic instead of `draws >= threshold`; both must agree for every
    # draw, including the threshold's neighbours and the int16 extremes, which 2^20 draws all hit.
    shape = torch.Size([1 << 20])
    torch.manual_seed(3)
    mask = keep_mask(shape, p, torch.float32, torch.device("cpu"))
    torch.manual_seed(3)
    words = torch.empty(shape.numel() // 4, dtype=torch.int64).random_(-(2**63), None)
    draws = words.view(torch.int16)
    drop_levels = round(p * 65536)
    kept = draws >= drop_levels - 32768
    assert torch.equal(mask, kept.float() * (65536 / (65536 - drop_levels)))
    assert draws.unique().numel() == 65536  # every int16 value, so the threshold's neighbours too


def test_neighbouring_draws_are_uncorrelated() -> None:
    torch.manual_seed(1)
    kept = (keep_mask(torch.Size([1 << 20]), 0.5, torch.float32, torch.device("cpu")) != 0).double()
    correlation = torch.corrcoef(torch.stack([kept[:-1], kept[1:]]))[0, 1].item()
    assert abs(correlation) < 5 / (1 << 10)


def test_the_mask_follows_the_seed() -> None:
    shape, cpu = torch.Size([3, 7]), torch.device("cpu")
    torch.manual_seed(5)
    first = keep_mask(shape, 0.2, torch.float32, cpu)
    second = keep_mask(shape, 0.2, torch.float32, cpu)
    torch.manual_seed(5)
    assert torch.equal(keep_mask(shape, 0.2, torch.float32, cpu), first)
    assert not torch.equal(first, second)


def test_eval_and_zero_p_are_the_identity() -> None:
    x, residual = torch.randn(5, 8), torch.randn(5, 8)
    assert torch.equal(Dropout(0.1).eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)
    assert torch.equal(Dropout(0.1).eval().add(residual, x), residual + x)


def test_add_is_the_residual_plus_dropout_with_the_masks_gradient() -> None:
    dropout = Dropout(0.25).train()
    x = torch.randn(6, 32, dtype=torch.bfloat16, requires_grad=True)
    residual = torch.randn(6, 32, requires_grad=True)
    torch.manual_seed(7)
    fused = dropout.add(residual, x)
    torch.manual_seed(7)
    mask = keep_mask(x.shape, 0.25, torch.float32, x.device)
    assert mask.dtype == torch.float32  # a bf16 scale would bias every kept value
    assert torch.allclose(fused, residual + x.float() * mask, rtol=1e-6, atol=1e-6)  # one FMA
    fused.sum().backward()
    assert torch.equal(residual.grad, torch.ones_like(residual))
    assert torch.equal(x.grad, mask.to(torch.bfloat16))
    torch.manual_seed(7)
    assert torch.equal(dropout(x), (x.float() * mask).to(torch.bfloat16))
