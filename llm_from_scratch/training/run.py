"""A run in three steps: plan (`planner.py`), train (`trainer.py`), hand over the final model
(`final.py`). `make train` calls `train_run` once the data and tokenizers are ready."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.final import final_model
from llm_from_scratch.training.planner import BudgetPlanner
from llm_from_scratch.training.report import FinalModel
from llm_from_scratch.training.run_dir import load_last
from llm_from_scratch.training.state import Progress
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
) -> TrainedRun:
    """Plan, train and score the run of `config` (resumed from its `last.pt` when there is one).
    `started_at`: `clock()` when the program started, for a time budget; `keep_model`: the command
    chose its model, which the short recipe then keeps."""
    dist = dist or Distributed()
    planner = BudgetPlanner(config, data, dist, clock, started_at, keep_model)
    run_dir = Path(config.paths.run_dir or config.paths.run(config.name))
    plan = planner.plan(saved_progress(run_dir))
    replan = planner.replan if planner.costs is not None else None
    trainer = Trainer(config, data, plan, dist, clock=clock, replan=replan)
    log = trainer.run_logger()
    try:
        metrics = trainer.fit(log)
        final = None
        validator = trainer.validator()
        if metrics and validator is not None:
            cfg = config.training
            step = trainer.progress.step
            final = final_model(trainer.model, validator, run_dir, cfg.keep_snapshots, step, log)
            log.hparams(trainer.hparams(), {f"hparam/{k}": v for k, v in metrics.items()})
    finally:
        log.close()
    return TrainedRun(trainer, metrics, final)


def saved_progress(run_dir: Path) -> Progress | None:
    """The progress of the run's `last.pt` (None: it has none)."""
    path = run_dir / "last.pt"
    if not path.is_file():
        return None
    return Progress.saved(load_last(path, mmap=True)["progress"])
