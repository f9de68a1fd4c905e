"""Plan, then prepare and train: the `Plan` a run trains, tokenizers included, fixed before any
tokenizer is trained or the data tokenized, so that the data stage runs once.

A step-budget run trains `training.max_steps` steps of its recipe (`recipe.py`). A resumed run
keeps the plan its `last.pt` stored. Under a time budget (`training.max_time`, see `schedule.py`)
the planner times updates, a validation and a save of each recipe it weighs on a stand-in of the
corpus (`probe.py`), picks the recipe and step count, and hands the trainer its `budget()`: a
`TimeBudget` that plans the step count again at the warm-up's end from the run's own steps,
when the data stage, which the first plan cannot price, is behind it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.training.budget.probe import probe_costs
from llm_from_scratch.training.budget.recipe import Plan, describe_recipe, recipe_plan
from llm_from_scratch.training.budget.schedule import (
    Costs,
    Deadline,
    Schedule,
    describe,
    plan,
    replan,
)
from llm_from_scratch.training.budget.stand_in import stand_in_data
from llm_from_scratch.training.budget.timing import Budget, TimeBudget
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.resume import SavedRun

logger = logging.getLogger(__name__)


class BudgetPlanner:
    def __init__(
        self,
        config: TrainConfig,
        dist: Distributed | None = None,
        clock: Callable[[], float] = time.perf_counter,
        started_at: float | None = None,
        keep_model: bool = False,
        keep_tokenizers: bool = False,
    ) -> None:
        """`started_at`: `clock()` when the program started, so that a time budget counts the
        data and tokenizer preparation too (default: now). `keep_model`, `keep_tokenizers`: the
        command chose them, which a short recipe then keeps."""
        self.config = config
        self.cfg = config.training
        self.dist = dist or Distributed()
        self.clock = clock
        self.started_at = clock() if started_at is None else started_at
        self.keep_model = keep_model
        self.keep_tokenizers = keep_tokenizers
        self.stand_in: DataModule | None = None  # the corpus's, once a probe needs it
        self.costs: Costs | None = None  # the chosen plan's probe, until the re-plan

    def plan(self, saved: SavedRun | None = None) -> Plan:
        """The run's plan, with what its budget asks of the loop (`budget`), logged; `saved`:
        the run's `last.pt`, when it has one."""
        progress = saved.progress if saved is not None else None
        if progress is not None and (progress.planned_steps or progress.step):
            # It keeps the plan it started with.
            planned = self._plan_of(progress.schedule(self.cfg), saved)
            return replace(planned, budgeted=bool(progress.planned_steps), budget=self.budget())
        budget, report = self.cfg.budget_seconds, []
        if budget is None:
            chosen = self._plan_of(Schedule.of(self.cfg))
        else:
            chosen, report = self._budget_plan(budget)
            chosen = replace(chosen, budgeted=True)
        if chosen.schedule.short:
            report.append(describe_recipe(chosen))
        if self.dist.is_main:
            for line in report:
                logger.info("%s", line)
        return replace(chosen, budget=self.budget())

    def _plan_of(self, schedule: Schedule, saved: SavedRun | None = None) -> Plan:
        return recipe_plan(self.config, schedule, self.keep_model, self.keep_tokenizers, saved)

    def _budget_plan(self, budget: float) -> tuple[Plan, list[str]]:
        """The step-budget run's recipe for as many steps as fit; where those are fewer than its
        `max_steps`, the short recipe (`training.short_run`) for as many of its steps as fit, if
        even its own length does not fit or the default's would be fewer than its
        `min_default_steps`. And the plan's log lines."""
        full = Schedule.of(self.cfg)
        short = self.cfg.short_run
        costs, speed = self._probe(self._plan_of(full))
        schedule = self._agreed(plan(self.cfg, self._seconds_left(budget), costs, full.short))
        if short is not None and not schedule.short and schedule.steps < full.steps:
            candidate, short_costs, short_speed = self._short_candidate(budget, short.max_steps)
            too_few = schedule.steps < short.min_default_steps
            if too_few or candidate.steps < short.max_steps:
                schedule, speed, costs = candidate, short_speed, short_costs
        self.costs = costs
        report = [
            f"timed on a stand-in of the corpus: an update {costs.step:.2f} s, a validation "
            f"{costs.validation:.1f} s, a save {costs.save:.2f} s",
            describe(schedule, full, budget, speed, self.cfg),
        ]
        return self._plan_of(schedule), report

    def _short_candidate(self, budget: float, steps: int) -> tuple[Schedule, Costs, float]:
        """The short recipe's longest schedule in what is left of `budget`, its costs and
        speed, timed on a trial of `steps` (its own model: its own steps and saves)."""
        costs, speed = self._probe(self._plan_of(Schedule.of(self.cfg, steps, short=True)))
        candidate = plan(self.cfg, self._seconds_left(budget), costs, short=True)
        return self._agreed(candidate), costs, speed

    def replan(
        self, schedule: Schedule, done: int, steps: int, seconds: float, tokens: int
    ) -> Schedule:
        """The rest of the run after its `done` steps, planned from its own `steps` updates,
        which took `seconds` and trained on `tokens`: the warm-up stays, so the steps taken are
        the new plan's too."""
        budget, costs = self.cfg.budget_seconds, self.costs
        assert budget is not None and costs is not None
        run_costs = replace(costs, step=seconds / max(steps, 1))
        again = replan(self.cfg, schedule, done, self._seconds_left(budget), run_costs)
        again = self._agreed(again, warmup=schedule.warmup_steps)
        if self.dist.is_main:
            speed = tokens * self.dist.world_size / max(seconds, 1e-9)
            logger.info(
                "planned again at step %d from the run's own steps (%.2f s each, the probe's "
                "%.2f s): %s",
                done,
                run_costs.step,
                costs.step,
                describe(again, Schedule.of(self.cfg), budget, speed, self.cfg),
            )
        return again

    def budget(self) -> Budget:
        """What the plan's budget asks of the loop: a time budget's re-plan and deadline where
        this planner planned from one, else nothing (a step budget, or a resumed run's plan)."""
        budget, costs = self.cfg.budget_seconds, self.costs
        if budget is None or costs is None:
            return Budget(self.clock)
        deadline = Deadline(self.started_at + budget, costs)
        return TimeBudget(self.clock, self.replan, deadline, self.cfg.patience is not None)

    def _seconds_left(self, budget: float) -> float:
        return budget - (self.clock() - self.started_at)

    def _agreed(self, schedule: Schedule, warmup: int | None = None) -> Schedule:
        """Rank 0's plan, on every rank: their probes time different batches (`warmup`: one
        kept from the first plan, which every rank agreed on)."""
        steps = self.dist.sum(schedule.steps if self.dist.is_main else 0)
        short = self.dist.sum(int(schedule.short) if self.dist.is_main else 0)
        return Schedule.of(self.cfg, steps, short=bool(short), warmup=warmup)

    def _probe(self, trial: Plan) -> tuple[Costs, float]:
        """Time `trial` on the stand-in of the corpus (`probe.py`)."""
        if self.stand_in is None:
            self.stand_in = stand_in_data(self.config.data, self.config.paths)
        return probe_costs(self.config, trial, self.stand_in, self.dist, self.clock)
