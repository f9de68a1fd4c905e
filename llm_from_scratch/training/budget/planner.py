"""Plan, then prepare and train: the `Plan` a run trains, its rung and tokenizers included, fixed
before any tokenizer is trained or the data tokenized, so that the data stage runs once.

A step-budget run trains `training.max_steps` steps of its rung (`plan.py`). A resumed run keeps
the plan its `last.pt` stored (`resume.saved_plan`). Under a time budget (`training.max_time`,
see `schedule.py`) the planner times the config's recipe on a stand-in of the corpus
(`probe.py`), picks the rung its compute affords (`recipe.py`), times that rung's own model where
it is another, and plans its steps to fill the budget. With the plan comes its `Pacing`: a
`TimeBudget` that plans the step count again at the warm-up's end from the run's own steps,
validations and saves, when the data stage, which the first plan cannot price, is behind it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace

from llm_from_scratch.data.datamodule import DataModule
from llm_from_scratch.training.budget.probe import probe_costs
from llm_from_scratch.training.budget.recipe import (
    Rung,
    choose_rung,
    describe,
    describe_recipe,
    ladder,
    rung_of,
)
from llm_from_scratch.training.budget.schedule import (
    Costs,
    Deadline,
    format_duration,
    plan,
    replan,
)
from llm_from_scratch.training.budget.stand_in import epoch_tokens, stand_in_data
from llm_from_scratch.training.budget.timing import TimeBudget
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.pacing import Pacing
from llm_from_scratch.training.plan import NOTHING_CHOSEN, Choices, Plan, Schedule, recipe_plan

logger = logging.getLogger(__name__)


class BudgetPlanner:
    def __init__(
        self,
        config: TrainConfig,
        dist: Distributed | None = None,
        clock: Callable[[], float] = time.perf_counter,
        started_at: float | None = None,
        chosen: Choices = NOTHING_CHOSEN,
    ) -> None:
        """`started_at`: `clock()` when the program started, so that a time budget counts the
        data and tokenizer preparation too (default: now). `chosen`: what the command chose,
        which the plan keeps."""
        self.config = config
        self.cfg = config.training
        self.dist = dist or Distributed()
        self.clock = clock
        self.started_at = clock() if started_at is None else started_at
        self.chosen = chosen
        self.stand_in: DataModule | None = None  # the corpus's, once a probe needs it
        self.costs: Costs | None = None  # the chosen plan's probe
        self.epoch_tokens = 0.0  # the corpus's, once a budget weighs the rungs

    def plan(self, resumed: Plan | None = None) -> tuple[Plan, Pacing]:
        """The run's plan and what its budget asks of the loop, logged. `resumed`: the plan of
        the run's `last.pt`, which it keeps."""
        if resumed is not None:
            return resumed, Pacing(self.clock)
        budget = self.cfg.budget_seconds
        if budget is None:
            return recipe_plan(self.config, Schedule.of(self.cfg), self.chosen), Pacing(self.clock)
        chosen, report = self._budget_plan(budget)
        if self.dist.is_main:
            for line in report:
                logger.info("%s", line)
        assert self.costs is not None
        deadline = Deadline(self.started_at + budget, self.costs)
        early_stopping = self.cfg.patience is not None
        keep = self.cfg.keep_snapshots
        pacing = TimeBudget(self.clock, self.replan, deadline, early_stopping, keep)
        return chosen, pacing

    def _plan_of(self, schedule: Schedule) -> Plan:
        return recipe_plan(self.config, schedule, self.chosen)

    def _budget_plan(self, budget: float) -> tuple[Plan, list[str]]:
        """The rung the budget affords (`recipe.choose_rung`), for as many of its steps as fit,
        and the plan's log lines."""
        cfg, rungs = self.cfg, ladder(self.cfg)
        default = next(rung for rung in rungs if rung.name == "default")
        costs, speed = self._probe(self._plan_of(default.trial(cfg)))
        seconds = self._seconds_left(budget)
        schedule = self._agreed(plan(cfg, seconds, costs, cap=self._cap()))
        compute, default_speed = speed * seconds, speed
        self.epoch_tokens = epoch_tokens(self.config.data, self.config.paths)
        rung = choose_rung(cfg, schedule.steps, compute, self.epoch_tokens, self.chosen.model)
        rung = rungs[self.dist.sum(rung.number if self.dist.is_main else 0) - 1]  # rank 0's
        if rung != default:
            costs, speed = self._probe(self._plan_of(rung.trial(cfg)))
            trial = rung.trial(cfg)
            rung_plan = plan(
                cfg, self._seconds_left(budget), costs, trial.short, trial.rung, self._cap()
            )
            schedule = self._agreed(rung_plan)
        self.costs = costs
        chosen = replace(self._plan_of(schedule), budgeted=True)  # stored in its checkpoints
        epochs = compute / max(self.epoch_tokens, 1.0)
        report = [
            f"timed on a stand-in of the corpus: an update {costs.step:.2f} s, a validation "
            f"{costs.validation:.1f} s, a save {costs.save:.2f} s",
            describe(
                rung,
                schedule,
                format_duration(budget),
                default_speed,
                compute,
                epochs,
                cfg,
                self.chosen.model,
            ),
        ]
        if rung != default:
            report.append(describe_recipe(chosen, rung))
        return chosen, report

    def replan(self, schedule: Schedule, done: int, costs: Costs, speed: float) -> Schedule:
        """The rest of the run after its `done` steps at the run's own `costs` and training
        tokens a second (`speed`, this rank's): the warm-up stays, so the steps taken are the
        new plan's too."""
        budget = self.cfg.budget_seconds
        assert budget is not None
        again = replan(self.cfg, schedule, done, self._seconds_left(budget), costs, self._cap())
        again = self._agreed(again, warmup=schedule.warmup_steps)
        if self.dist.is_main:
            probe = self.costs
            assert probe is not None
            rung = rung_of(self.cfg, again)
            logger.info(
                "planned again at step %d from the run's own steps (%.2f s each, the probe's "
                "%.2f s), validations (%.1f s, the probe's %.1f s) and saves (%.2f s, the "
                "probe's %.2f s) at %.1fk tokens/s: rung %d of %d (%s), %s steps; the same run "
                "without a budget: %s",
                done,
                costs.step,
                probe.step,
                costs.validation,
                probe.validation,
                costs.save,
                probe.save,
                speed * self.dist.world_size / 1000,
                rung.number,
                rung.of,
                rung.name,
                f"{again.steps:,}",
                again.overrides(self.cfg),
            )
        return again

    def _cap(self) -> int | None:
        """`training.max_steps` where the command set it: a time budget's cap."""
        return self.cfg.max_steps if self.chosen.max_steps else None

    def _seconds_left(self, budget: float) -> float:
        return budget - (self.clock() - self.started_at)

    def _agreed(self, schedule: Schedule, warmup: int | None = None) -> Schedule:
        """Rank 0's plan, on every rank: their probes time different batches (`warmup`: one
        kept from the first plan, which every rank agreed on)."""
        steps = self.dist.sum(schedule.steps if self.dist.is_main else 0)
        rung = rung_of(self.cfg, schedule)
        number = self.dist.sum(rung.number if self.dist.is_main else 0)
        agreed: Rung = ladder(self.cfg)[number - 1]
        return Schedule.of(
            self.cfg, steps, short=agreed.short, warmup=warmup, rung=agreed.ladder_name
        )

    def _probe(self, trial: Plan) -> tuple[Costs, float]:
        """Time `trial` on the stand-in of the corpus (`probe.py`)."""
        if self.stand_in is None:
            self.stand_in = stand_in_data(self.config.data, self.config.paths)
        return probe_costs(self.config, trial, self.stand_in, self.dist, self.clock)
