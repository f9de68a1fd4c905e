"""Continuing a run: a `Trainer` restored from its `last.pt`, exactly, or, where `last.pt` is gone
and `training.resume_from=snapshot` says so, from its newest snapshot, which holds all of
`last.pt` but the optimizer (`run_dir.resume_path` picks the file)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from llm_from_scratch.checkpoint import check_compatible, load_weights
from llm_from_scratch.precision import select_precision
from llm_from_scratch.training.run_dir import check_stopping_settings, load_resume, resume_path
from llm_from_scratch.training.state import SavedRun, set_rng_state

if TYPE_CHECKING:
    from llm_from_scratch.training.trainer import Trainer

logger = logging.getLogger(__name__)


def restore(trainer: Trainer) -> None:
    """Continue `trainer`'s run where its saved file stands (every rank reads the same file);
    the plan is the one it stored (`planner.py` read it). No file: a new run."""
    path = resume_path(trainer.run_dir, trainer.cfg)
    if path is None:
        return
    state = load_resume(path, map_location=trainer.device)
    saved = SavedRun.of(state)
    model = trainer.model
    check_compatible(state, model.cfg, trainer.data.src_tok, trainer.data.tgt_tok, path)
    load_weights(model, state["model"], str(path))
    check_stopping_settings(saved, trainer.cfg, path)
    trainer.progress = saved.progress
    trainer.progress.finished = saved.finished  # also for files from before the flag
    trainer.scheduler.load_state_dict(state["scheduler"])
    fresh = "optimizer" not in state  # a snapshot: Adam's moments start afresh
    if fresh:  # at the schedule's learning rate, which the optimizer's state would carry
        rates = trainer.scheduler.get_last_lr()
        for group, lr in zip(trainer.optimizer.param_groups, rates, strict=True):
            group["lr"] = lr
    else:
        trainer.optimizer.load_state_dict(state["optimizer"])
    _keep_saved_precision(trainer, state.get("precision"))
    trainer.scaler.load_state_dict(state["scaler"])
    set_rng_state(state["rng"])
    if trainer.dist.is_main:
        afresh = " (the optimizer's moments start afresh)" if fresh else ""
        logger.info("resumed %s at step %d%s", path, trainer.progress.step, afresh)


def _keep_saved_precision(trainer: Trainer, saved: str | None) -> None:
    """Under `auto`, continue at the checkpoint's precision: a CPU's pick is a timing that a busy
    moment can flip, and an exact continuation needs the same arithmetic."""
    if trainer.cfg.precision != "auto" or saved in (None, trainer.precision.name):
        return
    if saved == "fp16" and trainer.device.type != "cuda":
        return  # a GPU run continued on a CPU: fp16 is not an option here
    logger.info(
        "precision auto: continuing in %s, the precision %s started with", saved, trainer.run_dir
    )
    trainer.precision = select_precision(saved, trainer.device)
    trainer.scaler = trainer.precision.grad_scaler()
