"""Label-smoothed cross entropy over real target tokens.

On CPU the loss is fused: aten's `cross_entropy` makes three vocabulary-wide tensors per step (the
log-probabilities, a zero-filled gradient for them, and the logits' gradient), each a fresh
allocation too large for malloc to keep, so each costs page faults as well as its passes. Here the
forward keeps only each token's log-sum-exp, working through the logits in blocks that fit in the
L2 cache, and the backward writes the logits' gradient over the logits themselves, which nothing
needs after the loss. Other devices keep `F.cross_entropy`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel

from llm_from_scratch.precision import Precision
from llm_from_scratch.training.compiling import compiled
from llm_from_scratch.training.distributed import Distributed

_BLOCK_ELEMENTS = 1 << 18  # one fp32 block of logits is 1 MiB
PROFILER_RANGE = "cross_entropy"  # names the fused loss's operators in a torch.profiler trace


def summed_cross_entropy(
    logits: Tensor, targets: Tensor, pad_id: int, label_smoothing: float = 0.0
) -> Tensor:
    """Loss summed over the non-pad positions of `targets` (batch, tgt_len).

    A sum rather than a mean: the trainer divides by the target tokens of the whole accumulated
    batch, so that k micro-batches give exactly the update of one batch k times larger. On CPU,
    `logits` (batch, tgt_len, vocab) hold their own gradient once the loss has been backpropagated.
    """
    if logits.device.type == "cpu":
        return _FusedCrossEntropy.apply(
            logits.flatten(0, 1), targets.flatten(), pad_id, label_smoothing
        )
    return aten_cross_entropy(logits, targets, pad_id, label_smoothing)


def aten_cross_entropy(
    logits: Tensor, targets: Tensor, pad_id: int, label_smoothing: float = 0.0
) -> Tensor:
    """The same loss through aten's `F.cross_entropy`: other devices' path, and the reference the
    fused CPU loss is tested and benchmarked against."""
    return F.cross_entropy(
        logits.flatten(0, 1).float(),  # fp32 for a stable softmax
        targets.flatten(),
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
        reduction="sum",
    )


def _blocks(rows: int, vocab_size: int) -> list[slice]:
    size = max(1, _BLOCK_ELEMENTS // vocab_size)
    return [slice(start, start + size) for start in range(0, rows, size)]


class _FusedCrossEntropy(torch.autograd.Function):
    """Per token: log Σ exp(x) − (1 − ε)·x[target] − (ε / V)·Σ x, which is (1 − ε)·NLL plus
    ε times the mean NLL over the vocabulary; its gradient is softmax(x) − (1 − ε)·onehot − ε / V.
    Computed in fp32 (or wider) whatever the logits' dtype."""

    @staticmethod
    @torch.profiler.record_function(PROFILER_RANGE)
    def forward(ctx, logits: Tensor, targets: Tensor, pad_id: int, smoothing: float) -> Tensor:
        rows, vocab_size = logits.shape
        compute_dtype = torch.promote_types(logits.dtype, torch.float32)
        log_normalizer = torch.empty(rows, dtype=compute_dtype, device=logits.device)
        logit_sums = torch.zeros(rows, dtype=compute_dtype, device=logits.device)
        for block in _blocks(rows, vocab_size):
            values = logits[block].to(compute_dtype)
            torch.logsumexp(values, dim=-1, out=log_normalizer[block])
            if smoothing:
                torch.sum(values, dim=-1, out=logit_sums[block])
        real = targets != pad_id
        safe_targets = targets.masked_fill(~real, 0)  # pad_id may be outside the vocabulary
        target_logits = logits.gather(1, safe_targets[:, None]).squeeze(1).to(compute_dtype)
        per_token = log_normalizer - (1 - smoothing) * target_logits
        per_token -= (smoothing / vocab_size) * logit_sums
        ctx.save_for_backward(logits, safe_targets, real, log_normalizer)
        ctx.smoothing = smoothing
        return per_token.masked_fill(~real, 0.0).sum()

    @staticmethod
    @torch.profiler.record_function(PROFILER_RANGE)
    def backward(ctx, grad_loss: Tensor) -> tuple[Tensor, None, None, None]:
        logits, targets, real, log_normalizer = ctx.saved_tensors
        rows, vocab_size = logits.shape
        smoothing = ctx.smoothing
        token_grads = real.to(log_normalizer.dtype) * grad_loss
        target_share = torch.full((rows, 1), smoothing - 1, dtype=log_normalizer.dtype)
        for block in _blocks(rows, vocab_size):
            block_logits = logits[block]
            values = block_logits.to(log_normalizer.dtype)  # the same tensor when fp32
            values.sub_(log_normalizer[block, None]).exp_().sub_(smoothing / vocab_size)
            values.scatter_add_(1, targets[block, None], target_share[block])
            values.mul_(token_grads[block, None])
            if values is not block_logits:
                block_logits.copy_(values)
        return logits, None, None, None


class ModelLoss(nn.Module):
    """The model's forward under `precision`'s autocast, and its summed loss, as one module:
    what `torch.compile` compiles, so that the loss is in the same graph as the model."""

    def __init__(
        self, model: nn.Module, precision: Precision, pad_id: int, label_smoothing: float
    ) -> None:
        super().__init__()
        self.model = model
        self.precision = precision
        self.pad_id = pad_id
        self.label_smoothing = label_smoothing

    def forward(self, src: Tensor, src_mask: Tensor, tgt_in: Tensor, tgt_out: Tensor) -> Tensor:
        with self.precision.autocast():
            logits = self.model(src, src_mask, tgt_in)
        return summed_cross_entropy(logits, tgt_out, self.pad_id, self.label_smoothing)


def forward_module(
    model_loss: ModelLoss, ranks: Distributed, compiles: bool, shapes: Callable[[], int]
) -> nn.Module:
    """What a training step calls: `model_loss`, under DDP across `ranks`, compiled (`compiles`)
    for batches of `shapes()` distinct shapes."""
    module: nn.Module = model_loss
    if ranks.enabled:
        device = model_loss.precision.device
        ids = [device.index] if device.type == "cuda" else None
        module = DistributedDataParallel(model_loss, device_ids=ids, **unsynced_buffers())
    if compiles:
        module = compiled(module, shapes())
    return module


def unsynced_buffers() -> dict[str, bool]:
    """DDP's option that broadcasts no buffers before each forward: the position tables are the
    only buffers, computed alike on every rank, and never change. `forward_sync_buffers` where
    this torch has it; older releases (the GPU machines' 2.11) only have `broadcast_buffers`,
    which also skips the broadcast at construction, as tables computed alike can."""
    if "forward_sync_buffers" in inspect.signature(DistributedDataParallel).parameters:
        return {"forward_sync_buffers": False}
    return {"broadcast_buffers": False}
