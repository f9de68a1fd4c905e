"""Continuing a run: the saved state a `Trainer` restores, from its `last.pt`, exactly, or, where
`last.pt` is gone and `training.resume_from=snapshot` says so, from its newest snapshot, which
holds all of `last.pt` but the optimizer (`run_dir.resume_path` picks the file)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.checkpoint import check_compatible, load_weights
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.precision import Precision, select_precision
from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.run_dir import check_stopping_settings, load_resume, resume_path
from llm_from_scratch.training.state import SavedRun

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Saved:
    path: Path
    state: dict[str, Any]  # the file's entries
    run: SavedRun

    @property
    def has_optimizer(self) -> bool:
        """False for a snapshot: Adam's moments start afresh."""
        return "optimizer" in self.state


def load_saved(
    run_dir: Path, cfg: TrainingConfig, model: Seq2SeqTransformer, data: DataModule
) -> Saved | None:
    """The state the run in `run_dir` continues from, its weights loaded into `model`, checked to
    fit it and `cfg`'s stopping settings (every rank reads the same file). None: a new run."""
    path = resume_path(run_dir, cfg)
    if path is None:
        return None
    device = next(model.parameters()).device
    state = load_resume(path, map_location=device)
    run = SavedRun.of(state)
    check_compatible(state, model.cfg, data.src_tok, data.tgt_tok, path)
    load_weights(model, state["model"], str(path))
    check_stopping_settings(run, cfg, path)
    return Saved(path, state, run)


def restore_optimizer(optimizer: torch.optim.Optimizer, scheduler: Any, saved: Saved) -> None:
    """The saved optimizer; for a snapshot, a fresh one at the learning rate of the restored
    `scheduler`, which the optimizer's state would have carried."""
    if saved.has_optimizer:
        optimizer.load_state_dict(saved.state["optimizer"])
        return
    for group, lr in zip(optimizer.param_groups, scheduler.get_last_lr(), strict=True):
        group["lr"] = lr


def continued_precision(
    requested: str, current: Precision, saved: str | None, run_dir: Path
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
