"""AdamW with decay on weight matrices only, and the learning-rate schedules."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR

from llm_from_scratch.training.budget.schedule import Schedule
from llm_from_scratch.training.config import TrainingConfig


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


def lr_multiplier(step: int, kind: str, schedule: Schedule) -> float:
    """Fraction of the peak learning rate at optimizer step `step` (0-based): linear warm-up,
    then the decay.

    inverse_sqrt is the paper's schedule with its peak at the end of warm-up set to the peak;
    cosine decays to zero at the schedule's last step.
    """
    step += 1
    warmup = max(schedule.warmup_steps, 1)
    if step <= warmup:
        return step / warmup
    if kind == "inverse_sqrt":
        return math.sqrt(warmup / step)
    progress = min((step - warmup) / max(schedule.steps - warmup, 1), 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def build_scheduler(optimizer: torch.optim.Optimizer, kind: str, schedule: Schedule) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: lr_multiplier(step, kind, schedule))
