"""A run's state: where training stands (`Progress`, saved in every checkpoint) and what that
says about the run: its plan, whether it stops, and why.

The trainer asks these questions while it trains; `resume.SavedRun` asks them of a saved
`last.pt` before a rerun writes anything. A new reason to stop is a new field here and a new line in
`stop_reason`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields
from typing import Any

import torch

from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.plan import Schedule

# The settings that say when a run stops.
STOPPING_SETTINGS = ("max_steps", "max_time", "max_epochs", "patience")


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint so a resumed run continues exactly."""

    step: int = 0  # optimizer steps taken (skipped non-finite updates included)
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of `epoch` this rank has consumed
    elapsed: float = 0.0  # seconds of training, summed over resumed runs
    planned_steps: int = 0  # the step count `training.max_time` fixed; 0: not planned
    planned_short: bool = False  # the plan is of `training.short_run`'s recipe
    planned_rung: str | None = None  # the plan is of `training.ladder`'s rung of this name
    planned_warmup: int = 0  # a re-planned run's warm-up, its first plan's; 0: its recipe's
    best_bleu: float = -1.0
    best_step: int = 0  # the step of best.pt
    evals_without_improvement: int = 0
    nonfinite_in_a_row: int = 0
    last_snapshot: int = 0  # the step of the newest snapshot the run wrote; 0: none
    finished: bool = False  # the run stopped: running it again trains nothing

    @classmethod
    def saved(cls, data: dict[str, Any]) -> Progress:
        """The progress a checkpoint stored (a field it predates takes its default)."""
        known = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})

    def schedule(self, cfg: TrainingConfig) -> Schedule:
        """The run's schedule: the plan a time budget fixed, else `cfg`'s."""
        if not self.planned_steps:
            return Schedule.of(cfg)
        warmup = self.planned_warmup or None  # 0: the plan's own (no re-plan yet)
        return Schedule.of(cfg, self.planned_steps, self.planned_short, warmup, self.planned_rung)

    def record_validation(self, bleu: float) -> bool:
        """Count a validation's dev BLEU towards the best and the patience; True: a new best."""
        improved = bleu > self.best_bleu
        if improved:
            self.best_bleu, self.best_step = bleu, self.step
        self.evals_without_improvement = 0 if improved else self.evals_without_improvement + 1
        return improved

    def record_plan(self, schedule: Schedule, first: bool) -> None:
        """Store a budget's plan (`first`: before the first step; else the re-plan, which keeps
        the first plan's warm-up)."""
        self.planned_steps = schedule.steps
        if first:
            self.planned_short, self.planned_rung = schedule.short, schedule.rung
        else:
            self.planned_warmup = schedule.warmup_steps


def out_of_steps(progress: Progress, steps: int, cfg: TrainingConfig) -> bool:
    """Whether a run at `progress` has trained its `steps` or `cfg`'s epochs."""
    epochs_done = cfg.max_epochs is not None and progress.epoch >= cfg.max_epochs
    return progress.step >= steps or epochs_done


def out_of_patience(progress: Progress, cfg: TrainingConfig) -> bool:
    """Whether early stopping ends a run at `progress` under `cfg`'s patience."""
    return cfg.patience is not None and progress.evals_without_improvement >= cfg.patience


def stop_reason(progress: Progress, steps: int, cfg: TrainingConfig) -> str | None:
    """Why a run at `progress`, planned for `steps` under `cfg`'s stopping settings, stops (None:
    it trains on)."""
    if progress.step >= steps:
        return f"it trained all its {steps} steps"
    if out_of_patience(progress, cfg):
        return f"early stopping: no dev BLEU improvement in {cfg.patience} evaluations"
    if out_of_steps(progress, steps, cfg):
        return f"it trained its {cfg.max_epochs} epochs"
    return None


def rng_state(device: torch.device) -> dict[str, Any]:
    """The random number generators' states, which a resumed run continues from: the CPU's, and
    on CUDA `device`'s only (touching every GPU would open a context on each, from every rank)."""
    return {
        "torch": torch.get_rng_state(),
        "cuda": [torch.cuda.get_rng_state(device)] if device.type == "cuda" else [],
        "python": list(random.getstate()[1]),
    }


def set_rng_state(state: dict[str, Any], device: torch.device) -> None:
    """Restore what `rng_state` saved (a checkpoint from before saved every GPU's: the first is
    the first GPU's, the one a single-GPU run trained on)."""
    torch.set_rng_state(state["torch"].cpu())
    if state["cuda"] and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"][0].cpu(), device)
    random.setstate((3, tuple(state["python"]), None))


def dropout_seed(seed: int, rank: int, world_size: int, step: int) -> int:
    """The seed of DDP rank `rank`'s dropout masks from `step` on: each rank its own, and none
    another rank's or another step's (rank 0 keeps the single-process run's generator, and only
    its state is saved)."""
    return seed + rank + step * world_size
