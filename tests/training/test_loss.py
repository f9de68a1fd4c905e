"""The fused CPU cross entropy equals aten's label-smoothed `F.cross_entropy`: loss, gradients."""

import pytest
import torch

from llm_from_scratch.training import loss as loss_module
from llm_from_scratch.training.loss import aten_cross_entropy, summed_cross_entropy

PAD_ID = 0


def aten(logits: torch.Tensor, targets: torch.Tensor, smoothing: float) -> torch.Tensor:
    return aten_cross_entropy(logits, targets, PAD_ID, smoothing)


def loss_and_grads(loss_fn, smoothing: float, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """The loss of a tiny output layer, and the gradients of its input and weights."""
    torch.manual_seed(0)
    hidden = torch.randn(3, 50, 16, requires_grad=True)
    weight = (torch.randn(301, 16) / 4).requires_grad_()
    targets = torch.randint(1, 301, (3, 50))
    targets[:, 40:] = PAD_ID  # padded tails
    targets[1, 5] = PAD_ID
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
        logits = hidden @ weight.t()
    loss = loss_fn(logits, targets, smoothing)
    loss.backward()
    return loss.detach(), hidden.grad, weight.grad


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_fused_loss_and_gradients_equal_aten_in_fp32(smoothing: float) -> None:
    fused = loss_and_grads(
        lambda logits, targets, eps: summed_cross_entropy(logits, targets, PAD_ID, eps),
        smoothing,
        torch.float32,
    )
    expected = loss_and_grads(aten, smoothing, torch.float32)
    for ours, theirs in zip(fused, expected, strict=True):
        assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_fused_gradients_equal_aten_under_bf16_autocast() -> None:
    fused = loss_and_grads(
        lambda logits, targets, eps: summed_cross_entropy(logits, targets, PAD_ID, eps),
        0.1,
        torch.bfloat16,
    )
    expected = loss_and_grads(aten, 0.1, torch.bfloat16)
    assert fused[0].item() == pytest.approx(expected[0].item(), rel=1e-5)
    for ours, theirs in zip(fused[1:], expected[1:], strict=True):
        # Both round the fp32 logit gradient to bf16 once before the output layer's backward.
        assert torch.allclose(ours, theirs, rtol=2e-2, atol=2e-3 * theirs.abs().max().item())


def test_blocks_smaller_than_a_row_and_a_ragged_last_block(monkeypatch) -> None:
    monkeypatch.setattr(loss_module, "_BLOCK_ELEMENTS", 700)  # 2 rows of 301 per block, 150 rows
    fused = loss_and_grads(
        lambda logits, targets, eps: summed_cross_entropy(logits, targets, PAD_ID, eps),
        0.1,
        torch.float32,
    )
    expected = loss_and_grads(aten, 0.1, torch.float32)
    for ours, theirs in zip(fused, expected, strict=True):
        assert torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_only_pad_targets_give_zero_loss_and_zero_gradients() -> None:
    hidden = torch.randn(2, 4, 8, requires_grad=True)
    logits = hidden @ torch.randn(8, 11)
    loss = summed_cross_entropy(logits, torch.full((2, 4), PAD_ID), PAD_ID, 0.1)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(hidden.grad, torch.zeros_like(hidden))


def test_another_use_of_the_logits_fails_loudly_instead_of_reading_the_gradient() -> None:
    # The backward writes the gradient over the logits; a node that saved them and runs after it
    # (autograd runs the later-recorded node first) must notice.
    hidden = torch.randn(2, 4, 8, requires_grad=True)
    logits = hidden @ torch.randn(8, 11)
    squares = logits.pow(2).sum()  # saves the logits for its backward
    total = squares + summed_cross_entropy(logits, torch.randint(1, 11, (2, 4)), PAD_ID)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        total.backward()
