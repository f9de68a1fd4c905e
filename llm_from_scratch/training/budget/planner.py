"""Plan, then train: the `Plan` a run trains, fixed before its `Trainer` is built.

A step-budget run trains `training.max_steps` steps of its recipe (`recipe.py`). A resumed run
keeps the plan its `last.pt` stored. Under a time budget (`training.max_time`, see `schedule.py`)
the planner times a few updates, a validation and a save of a throw-away trainer of each recipe
it weighs, picks the recipe and step count, and hands the trainer its `budget()`: a
`TimeBudget` that plans the step count again at the warm-up's end from the run's own steps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from llm_from_scratch.checkpoint import save_checkpoint
from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.device import synchronize
from llm_from_scratch.training.budget.recipe import Plan, describe_recipe, recipe_plan
from llm_from_scratch.training.budget.schedule import (
    Costs,
    Deadline,
    Schedule,
    describe,
    measure_costs,
    plan,
    replan,
)
from llm_from_scratch.training.budget.timing import Budget, TimeBudget
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.state import Progress
from llm_from_scratch.training.trainer import Trainer

logger = logging.getLogger(__name__)


class BudgetPlanner:
    def __init__(
        self,
        config: TrainConfig,
        data: DataModule,
        dist: Distributed | None = None,
        clock: Callable[[], float] = time.perf_counter,
        started_at: float | None = None,
        keep_model: bool = False,
        short_only: bool = False,
    ) -> None:
        """`started_at`: `clock()` when the program started, so that a time budget counts the
        data and tokenizer preparation too (default: now). `keep_model`: the command chose its
        model, which a short recipe then keeps. `short_only`: a time budget plans the short
        recipe without weighing the default's again (the data was prepared for it)."""
        self.config = config
        self.cfg = config.training
        self.data = data
        self.dist = dist or Distributed()
        self.clock = clock
        self.started_at = clock() if started_at is None else started_at
        self.keep_model = keep_model
        self.short_only = short_only
        self.costs: Costs | None = None  # the chosen plan's probe, until the re-plan
        self.report: list[str] = []  # the plan's log lines, until announced

    def plan(self, saved: Progress | None = None, announce: bool = True) -> Plan:
        """The run's plan, with what its budget asks of the loop (`budget`); `saved`: the
        progress of the run's `last.pt`, when it has one. `announce`: log it now; False keeps
        its lines for `announce()`, so that a plan the run may still give up (for the short
        recipe's own tokenizers) is never logged."""
        budget = self.cfg.budget_seconds
        if saved is not None and (saved.planned_steps or saved.step):
            planned = self._plan_of(saved.schedule(self.cfg))  # it keeps the plan it started with
            return replace(planned, budgeted=bool(saved.planned_steps), budget=self.budget())
        if budget is None:
            chosen = self._plan_of(Schedule.of(self.cfg))
            if chosen.schedule.short:
                self.report = [describe_recipe(chosen)]
        else:
            chosen = replace(self._budget_plan(budget), budgeted=True)
        if announce:
            self.announce()
        return replace(chosen, budget=self.budget())

    def announce(self) -> None:
        """Log the plan's lines (on the main process)."""
        if self.dist.is_main:
            for line in self.report:
                logger.info("%s", line)
        self.report = []

    def _plan_of(self, schedule: Schedule) -> Plan:
        return recipe_plan(self.config, schedule, self.keep_model)

    def _budget_plan(self, budget: float) -> Plan:
        """The step-budget run's recipe for as many steps as fit; where those are fewer than its
        `max_steps`, the short recipe (`training.short_run`) for as many of its steps as fit, if
        even its own length does not fit or the default's would be fewer than its
        `min_default_steps`."""
        full = Schedule.of(self.cfg)
        short = self.cfg.short_run
        if self.short_only and short is not None:
            schedule, costs, speed = self._short_candidate(budget, short.max_steps)
        else:
            costs, speed = self._probe(self._plan_of(full))
            schedule = self._agreed(plan(self.cfg, self._seconds_left(budget), costs, full.short))
        if short is not None and not schedule.short and schedule.steps < full.steps:
            candidate, short_costs, short_speed = self._short_candidate(budget, short.max_steps)
            too_few = schedule.steps < short.min_default_steps
            if too_few or candidate.steps < short.max_steps:
                schedule, speed, costs = candidate, short_speed, short_costs
        self.costs = costs
        chosen = self._plan_of(schedule)
        self.report = [
            f"timed: an update {costs.step:.2f} s, a validation {costs.validation:.1f} s, "
            f"a save {costs.save:.2f} s",
            describe(schedule, full, budget, speed, self.cfg),
        ]
        if schedule.short:
            self.report.append(describe_recipe(chosen))
        return chosen

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
        """Time a few updates of a throw-away trainer of `trial` on the run's first batches, a
        validation and a save: the run's own trainer then starts as if they never happened."""
        trainer = Trainer(self.config, self.data, trial, self.dist)
        validator = trainer.validator()
        batches = trainer.batches()
        probe_file = trainer.run_dir.budget_probe

        def run_step() -> int:
            group = next(batches)
            trainer.update(group)
            return sum(batch.src_tokens + batch.tgt_tokens for batch in group.batches)

        def save() -> None:  # last.pt, and the snapshot that goes with it
            if not self.dist.is_main:
                return
            save_checkpoint(probe_file, trainer.state())
            probe_file.unlink()
            if self.cfg.keep_snapshots:
                save_checkpoint(probe_file, trainer.snapshot_state())
                probe_file.unlink()

        def rehearse() -> None:
            if validator is not None:
                validator.rehearse()

        def clock() -> float:  # the updates' queued device work done, not just queued
            synchronize(trainer.device)
            return self.clock()

        test_share = validator.test_share() if validator is not None else 0.0
        return measure_costs(run_step, rehearse, save, self.cfg.keep_snapshots, clock, test_share)
