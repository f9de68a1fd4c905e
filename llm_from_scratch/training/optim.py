"""AdamW with decay on weight matrices only, and the learning-rate schedules."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.plan import Schedule


def build_optimizer(
    model: nn.Module, cfg: TrainingConfig, device: torch.device
) -> torch.optim.AdamW:
    """Decay matrices (linear and embedding weights); biases and LayerNorm gains are left alone."""
    parameters = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in parameters if p.ndim >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in parameters if p.ndim < 2], "weight_decay": 0.0},
    ]
    # torch's fused AdamW updates each parameter in one pass; its default on CPU is a loop of
    # separate element-wise operations per parameter.
    fused = device.type in ("cpu", "cuda")
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9, fused=fused)


def step_unless_nonfinite(
    optimizer: torch.optim.Optimizer, grad_norm: torch.Tensor
) -> torch.Tensor:
    """`optimizer.step()`, which leaves the weights and moments as they are when `grad_norm` is
    not finite; returns that decision (bool, on the device).

    A fused optimizer takes the decision as GradScaler hands it over, a `found_inf` tensor that
    the kernel itself reads, so the host never waits for the gradients. After DDP's all-reduce the
    norm is every rank's, so every rank skips the same steps. A non-finite loss makes non-finite
    gradients (its logits are), so the norm alone decides.
    """
    skipped = ~torch.isfinite(grad_norm)
    if not optimizer.defaults.get("fused"):
        if not skipped:  # an unfused optimizer cannot skip on the device
            optimizer.step()
        return skipped
    optimizer.found_inf = skipped.float()  # type: ignore[attr-defined]
    try:
        optimizer.step()
    finally:
        del optimizer.found_inf  # type: ignore[attr-defined]
    return skipped


def lr_multiplier(step: int, kind: str, schedule: Schedule) -> float:
    """Fraction of the peak learning rate at optimizer step `step` (0-based): linear warm-up,
    then the decay.

    inverse_sqrt is the paper's schedule with its peak at the end of warm-up set to the peak;
    cosine decays to zero at the schedule's last step; wsd keeps the peak until its last
    `decay_steps`, then decays to zero at the last step as 1 - sqrt (Hägele et al. 2024).
    """
    step += 1
    warmup = max(schedule.warmup_steps, 1)
    if step <= warmup:
        return step / warmup
    if kind == "inverse_sqrt":
        return math.sqrt(warmup / step)
    if kind == "wsd":
        decaying = step - (schedule.steps - schedule.decay_steps)
        return 1.0 - math.sqrt(min(max(decaying, 0) / max(schedule.decay_steps, 1), 1.0))
    progress = min((step - warmup) / max(schedule.steps - warmup, 1), 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(optimizer: torch.optim.Optimizer, kind: str, schedule: Schedule) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: lr_multiplier(step, kind, schedule))


def rescheduled(
    optimizer: torch.optim.Optimizer, scheduler: LambdaLR, kind: str, schedule: Schedule
) -> LambdaLR:
    """`scheduler`'s successor for `schedule` (a time budget's re-plan), at the step it reached:
    the optimizer's learning rates are the new schedule's from the next update on."""
    position = scheduler.state_dict()
    successor = build_scheduler(optimizer, kind, schedule)
    successor.load_state_dict(position)
    next_lr = lr_multiplier(successor.last_epoch, kind, schedule)
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"] * next_lr
    return successor
