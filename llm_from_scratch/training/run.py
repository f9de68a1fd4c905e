"""A run in three steps: plan (`budget/planner.py`), train (`trainer.py`), hand over the final
model (`final.py`). `make train` calls `train_run` once the data and tokenizers are ready."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.paths import RunDir
from llm_from_scratch.schema import to_data
from llm_from_scratch.training.budget.planner import BudgetPlanner
from llm_from_scratch.training.budget.recipe import recipe_tokenizers
from llm_from_scratch.training.budget.schedule import Schedule
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.final import final_model
from llm_from_scratch.training.parent import Parent
from llm_from_scratch.training.report import FinalModel, hparams
from llm_from_scratch.training.resume import NOT_READ, NotRead, SavedRun, saved_or_read
from llm_from_scratch.training.trainer import Trainer

logger = logging.getLogger(__name__)


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
    prepare: Callable[[TrainConfig], DataModule] | None = None,
    saved: SavedRun | NotRead | None = NOT_READ,
) -> TrainedRun:
    """Plan, train and score the run of `config` (resumed from its `last.pt` when there is one).
    Raises `stop.Stopped` when a signal stopped it, after saving `last.pt`.
    `started_at`: `clock()` when the program started, for a time budget; `keep_model`: the command
    chose its model, which the short recipe then keeps; `parent`: the model a new run starts from
    (`training.init_from`, read by `parent.read_parent`). `prepare`: the data stage for other
    tokenizers, where a time budget picks the short recipe and its own (`recipe_tokenizers`);
    None: the run keeps the tokenizers of `data`. `saved`: what the run continues from, as
    `resume.read_saved_run` read it (default: read here)."""
    dist = dist or Distributed()
    planner = BudgetPlanner(config, data, dist, clock, started_at, keep_model)
    run_dir = RunDir.of(config.paths, config.name)
    saved = saved_or_read(saved, run_dir, config.training)
    plan = planner.plan(saved.progress if saved is not None else None, announce=False)
    own = recipe_tokenizers(config, plan.schedule.short, keep=prepare is None)
    # the first plan, given up for the short recipe's own tokenizers, is never logged
    if plan.budgeted and saved is None and own.tokenizer != config.tokenizer:
        assert prepare is not None
        if dist.is_main:
            logger.info(
                "the short recipe trains its own tokenizers (training.short_run.vocab_size=%d): "
                "preparing the data for them, then planning again",
                own.tokenizer.vocab_size,
            )
        config, data = own, prepare(own)
        planner = BudgetPlanner(config, data, dist, clock, planner.started_at, keep_model, True)
        plan = planner.plan()
    else:
        planner.announce()
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


def recipe_config(
    config: TrainConfig,
    keep_tokenizers: bool = False,
    saved: SavedRun | NotRead | None = NOT_READ,
) -> TrainConfig:
    """`config` with the tokenizers of the recipe it trains, where the data stage can know it:
    a step-budget run's, or a resumed run's if it trained them (see `recipe.recipe_tokenizers`;
    `keep_tokenizers`: the command or a parent chose them). A new time-budget run learns its
    recipe from the planner's probe, and `train_run` prepares the data again where it must.
    `saved`: what the run continues from, as `resume.read_saved_run` read it (default: read
    here)."""
    saved = saved_or_read(saved, RunDir.of(config.paths, config.name), config.training)
    if saved is None:
        short = config.training.budget_seconds is None and Schedule.of(config.training).short
        return recipe_tokenizers(config, short, keep_tokenizers)
    own = recipe_tokenizers(config, saved.schedule.short, keep_tokenizers)
    return own if saved.state["config"]["tokenizer"] == to_data(own.tokenizer) else config
