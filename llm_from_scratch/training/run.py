"""A run in three steps: plan (`budget/planner.py`), train (`trainer.py`), hand over the final
model (`final.py`). `make train` calls `train_run` once the data and tokenizers are ready."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.paths import RunDir
from llm_from_scratch.training.budget.planner import BudgetPlanner
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.final import final_model
from llm_from_scratch.training.parent import Parent
from llm_from_scratch.training.report import FinalModel, hparams
from llm_from_scratch.training.resume import NOT_READ, NotRead, SavedRun, saved_or_read
from llm_from_scratch.training.trainer import Trainer


@dataclass
class TrainedRun:
    trainer: Trainer
    metrics: dict[str, float]  # the last validation's dev metrics; empty: nothing was trained
    final: FinalModel | None  # the model handed over, on the main process


def train_run(
    config: TrainConfig,
    data: DataModule,
    dist: Distributed | None = None,
    started_at: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
    keep_model: bool = False,
    parent: Parent | None = None,
    saved: SavedRun | NotRead | None = NOT_READ,
) -> TrainedRun:
    """Plan, train and score the run of `config` (resumed from its `last.pt` when there is one).
    Raises `stop.Stopped` when a signal stopped it, after saving `last.pt`.
    `started_at`: `clock()` when the program started, for a time budget; `keep_model`: the command
    chose its model, which the short recipe then keeps; `parent`: the model a new run starts from
    (`training.init_from`, read by `parent.read_parent`); `saved`: what the run continues from,
    as `resume.read_saved_run` read it (default: read here)."""
    dist = dist or Distributed()
    planner = BudgetPlanner(config, data, dist, clock, started_at, keep_model)
    run_dir = RunDir.of(config.paths, config.name)
    saved = saved_or_read(saved, run_dir, config.training)
    plan = planner.plan(saved.progress if saved is not None else None)
    replan = planner.replan if planner.costs is not None else None
    deadline = planner.deadline()
    trainer = Trainer(config, data, plan, dist, clock, replan, deadline, parent, saved)
    if saved is not None and saved.finished:
        return TrainedRun(trainer, trainer.fit(), None)  # which checks the stopping settings
    log = trainer.run_logger()
    try:
        metrics = trainer.fit(log)
        final = None
        validator = trainer.validator()
        if metrics and validator is not None:
            cfg = config.training
            step = trainer.progress.step
            final = final_model(trainer.model, validator, run_dir, cfg.keep_snapshots, step, log)
            run_hparams = hparams(config, plan, trainer.model, trainer.precision.name)
            log.hparams(run_hparams, {f"hparam/{k}": v for k, v in metrics.items()})
    finally:
        log.close()
    return TrainedRun(trainer, metrics, final)
