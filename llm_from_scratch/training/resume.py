"""Continuing a run: the one read of the file it continues from, and what a `Trainer` restores.

`read_saved_run` reads it once per run start (`programs/train.py`), and the finished-run check,
the planner and the `Trainer` share what it read. The file is `last.pt`, which continues the run
exactly; where it is gone and `training.resume_from=snapshot` says so, the newest snapshot, which
holds all of `last.pt` but the optimizer. A run directory that holds a run's files (snapshots,
`best.pt`, `averaged.pt`) but neither is refused rather than trained over from step 0. Snapshots
newer than the step a run continues from are discarded before it trains
(`discard_snapshots_after`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint
from llm_from_scratch.errors import UserError
from llm_from_scratch.paths import RunDir, snapshot_step
from llm_from_scratch.precision import Precision, select_precision
from llm_from_scratch.schema import to_schema
from llm_from_scratch.training.config import TrainConfig, TrainingConfig
from llm_from_scratch.training.lock import NEW_RUN
from llm_from_scratch.training.plan import Choices, Plan, Schedule, recipe_plan
from llm_from_scratch.training.state import (
    STOPPING_SETTINGS,
    Progress,
    out_of_patience,
    out_of_steps,
    stop_reason,
)

logger = logging.getLogger(__name__)

# What `last.pt` holds beyond an inference checkpoint, to continue a run exactly.
TRAINING_STATE = ("optimizer", "scheduler", "scaler", "progress", "rng")
# What a snapshot holds beyond an inference checkpoint: all of last.pt but the optimizer.
SNAPSHOT_STATE = ("scheduler", "scaler", "progress", "rng")
RESUME_FROM_SNAPSHOT = "training.resume_from=snapshot"


class FinishedRunError(UserError):
    """A finished run was asked to train on under other stopping settings."""


class OrphanedRunError(UserError):
    """A run directory holds a run's files but no `last.pt` to continue it from."""


class ScheduleChangedError(UserError):
    """An unfinished run was asked to continue under another learning-rate schedule."""


@dataclass(frozen=True)
class SavedRun:
    """The file a run continues from: its entries, and what they say about the run."""

    path: Path
    state: dict[str, Any]  # the file's entries, on the CPU
    progress: Progress
    training: TrainingConfig  # the settings it trained

    @classmethod
    def of(cls, path: Path, state: dict[str, Any]) -> SavedRun:
        saved = dict(state["config"]["training"])
        known = {field.name for field in fields(TrainingConfig)}
        training = {key: value for key, value in saved.items() if key in known}
        progress = Progress.saved(state["progress"])
        return cls(path, state, progress, to_schema(training, TrainingConfig))

    @property
    def has_optimizer(self) -> bool:
        """False for a snapshot: Adam's moments start afresh."""
        return "optimizer" in self.state

    @property
    def schedule(self) -> Schedule:
        return self.progress.schedule(self.training)

    @property
    def finished(self) -> bool:
        """Whether no step of the run is left to train."""
        return self.progress.finished or self.progress.step >= self.schedule.steps

    @property
    def reason(self) -> str:
        return stop_reason(self.progress, self.schedule.steps, self.training) or "it stopped"

    def changed_stopping_settings(self, cfg: TrainingConfig) -> list[str]:
        return [
            f"training.{key}={getattr(cfg, key)} (it had {getattr(self.training, key)})"
            for key in STOPPING_SETTINGS
            if getattr(cfg, key) != getattr(self.training, key)
        ]

    def stops_under(self, cfg: TrainingConfig) -> bool:
        """Whether a run with `cfg`'s stopping settings stops where this one stands."""
        if any(
            getattr(cfg, key) != getattr(self.training, key) for key in ("max_steps", "max_time")
        ):
            return False  # another schedule: other steps
        steps = self.schedule.steps
        return out_of_steps(self.progress, steps, cfg) or out_of_patience(self.progress, cfg)


def read_saved_run(run_dir: RunDir, cfg: TrainingConfig) -> SavedRun | None:
    """The file the run in `run_dir` continues from (`resume_path`), read (None: a new run).
    Memory-mapped: a finished run's check needs only its progress, and a resumed run copies
    the tensors where they go."""
    path = resume_path(run_dir, cfg)
    if path is None:
        return None
    state = load_checkpoint(path, map_location="cpu", mmap=True)
    missing = [key for key in _required(run_dir, path) if key not in state]
    if missing and path == run_dir.last:
        raise CheckpointError(
            f"{path} is not a training checkpoint (it lacks {', '.join(missing)}): a "
            "weights-only file (a snapshot, averaged.pt) cannot resume training; move it "
            f"away, or {NEW_RUN}"
        )
    if missing:
        raise CheckpointError(
            f"{path} cannot continue the run (it lacks {', '.join(missing)}: it predates "
            f"snapshots that can); {NEW_RUN}"
        )
    saved = SavedRun.of(path, state)
    check_schedule_kept(saved, cfg, run_dir)
    return saved


def schedule_settings(cfg: TrainingConfig) -> dict[str, Any]:
    """The settings that shape the learning rate's curve beside the steps and warm-up a plan
    sets."""
    return {"schedule": cfg.schedule} | (
        {"decay_share": cfg.decay_share} if cfg.schedule == "wsd" else {}
    )


def check_schedule_kept(saved: SavedRun, cfg: TrainingConfig, run_dir: RunDir) -> None:
    """Refuse to continue an unfinished run under another schedule than it trained with (a
    command's, or a default changed since it started): its steps so far followed another curve,
    and the run would be one that no uninterrupted run trains. A finished run's differences are
    `finished.py`'s to name."""
    if saved.finished:
        return
    kept, asked = schedule_settings(saved.training), schedule_settings(cfg)
    if kept != asked:
        trained, told = (
            " ".join(f"training.{key}={value}" for key, value in settings.items())
            for settings in (kept, asked)
        )
        raise ScheduleChangedError(
            f"{run_dir} trained to step {saved.progress.step} with {trained}, and this command "
            f"says {told}: add {trained} to continue it, or {NEW_RUN}"
        )


def _required(run_dir: RunDir, path: Path) -> tuple[str, ...]:
    return TRAINING_STATE if path == run_dir.last else SNAPSHOT_STATE


def resume_path(run_dir: RunDir, cfg: TrainingConfig) -> Path | None:
    """The file a run in `run_dir` continues from: `last.pt`; where it is gone and `cfg` says
    `resume_from=snapshot`, the newest snapshot; None: nothing there, a new run.

    Raises `OrphanedRunError` for a directory with a run's files but neither: training there
    would start from step 0 and write over them."""
    last = run_dir.last
    if last.is_file():
        return last
    snapshots = run_dir.snapshot_paths()
    models = [path.name for path in (run_dir.best, run_dir.averaged) if path.is_file()]
    if snapshots and cfg.resume_from == "snapshot":
        return snapshots[-1]
    if not snapshots and not models:
        return None
    held = [f"snapshots up to step {snapshot_step(snapshots[-1])}"] if snapshots else []
    there = f"{run_dir} holds {', '.join(held + models)} but no {last.name}"
    if not snapshots:
        raise OrphanedRunError(
            f"{there}, and no snapshot to continue from: training there would start from step "
            f"0 and overwrite them; {NEW_RUN}"
        )
    newest = snapshots[-1].relative_to(run_dir.root)
    raise OrphanedRunError(
        f"{there}: training there would start from step 0 and overwrite them; {NEW_RUN}, or "
        f"continue from {newest} with {RESUME_FROM_SNAPSHOT} (its "
        "weights, schedule and data position; a snapshot has no optimizer state, so Adam's "
        "moments start afresh and the run is close to, not exactly, the uninterrupted one)"
    )


def check_stopping_settings(saved: SavedRun, cfg: TrainingConfig) -> None:
    """Refuse to continue a finished run: stopping settings under which it would train on (a
    larger `max_steps`, a longer patience) are an error; others (a patience added to a run that
    trained all its steps) leave it finished."""
    if not saved.finished:
        return
    changed = saved.changed_stopping_settings(cfg)
    if changed and not saved.stops_under(cfg):
        raise FinishedRunError(
            f"{saved.path.parent} finished at step {saved.progress.step} ({saved.reason}); "
            f"{', '.join(changed)} would continue a finished run, whose learning-rate schedule "
            f"was laid out for the steps it had: to train another schedule, {NEW_RUN}"
        )


def saved_plan(config: TrainConfig, saved: SavedRun | None, chosen: Choices) -> Plan | None:
    """The plan a run that `saved` continues keeps, the one it started with (None: no run to
    continue, or one saved before its first step, which plans afresh)."""
    progress = saved.progress if saved is not None else None
    if saved is None or progress is None or not (progress.planned_steps or progress.step):
        return None
    plan = recipe_plan(config, progress.schedule(config.training), chosen, saved.state["config"])
    return replace(plan, budgeted=bool(progress.planned_steps))


def restore_optimizer(optimizer: torch.optim.Optimizer, scheduler: Any, saved: SavedRun) -> None:
    """The saved optimizer; for a snapshot, a fresh one at the learning rate of the restored
    `scheduler`, which the optimizer's state would have carried."""
    if saved.has_optimizer:
        optimizer.load_state_dict(saved.state["optimizer"])
        return
    for group, lr in zip(optimizer.param_groups, scheduler.get_last_lr(), strict=True):
        group["lr"] = lr


def continued_precision(
    requested: str, current: Precision, saved: str | None, run_dir: RunDir
) -> Precision | None:
    """Under `auto`, the checkpoint's precision where it differs from `current` (None: keep it):
    a CPU's pick is a timing that a busy moment can flip, and an exact continuation needs the
    same arithmetic."""
    if requested != "auto" or saved in (None, current.name):
        return None
    if saved == "fp16" and current.device.type != "cuda":
        return None  # a GPU run continued on a CPU: fp16 is not an option here
    logger.info("precision auto: continuing in %s, the precision %s started with", saved, run_dir)
    return select_precision(saved, current.device)


def discard_snapshots_after(run_dir: RunDir, step: int) -> list[Path]:
    """Delete the snapshots of steps after `step`, the step `last.pt` holds (0: none).

    A snapshot is written before its step's `last.pt`, so a run killed between the two leaves a
    snapshot that the resumed run trains to again and rewrites; removing it first keeps even a
    resumed run whose schedule was planned anew (no `last.pt` yet) from averaging a stray one."""
    stray = [path for path in run_dir.snapshot_paths() if snapshot_step(path) > step]
    for path in stray:
        path.unlink()
        logger.info("removed %s: it is newer than %s (step %d)", path, run_dir.last, step)
    return stray
