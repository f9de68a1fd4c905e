"""A run that fits a wall-clock budget (`training.max_time`): a schedule planned, not cut off.

After a short timed probe the planner (`planner.py`) fixes the run's step count: the most steps,
up to `training.max_steps`, whose training, validations, checkpoint saves, final averaging and
final test decoding fit in what is left of the budget. The warm-up and the snapshot interval
shrink in proportion (the warm-up to no fewer steps than the re-plan needs to time), so the
learning rate still reaches zero at the last step and the averaged snapshots cover the same
fraction of the run; validation keeps its interval (fewer validations leave more time to train).
A run short enough for `training.short_run` trains its recipe (its model's layers and dropout,
learning rate, batch size, warm-up and snapshot interval as shares of the run), whether the budget
or `training.max_steps` made it short; the trainer builds that model once the plan is made. Where
the budget switched a run to that recipe, its step count is bounded by the time alone, not by
`training.short_run.max_steps`: that bound separates the recipes of step-budget runs, and a
budget that fits more of the cheaper steps would otherwise end early.
At the warm-up's last step the trainer plans once more, from the run's own step time (`replan`):
a probe of a few steps misjudges a run of thousands when the host's load drifts. Until the
warm-up ends the learning rate does not depend on the step count, so the run keeps the weights of
the step-budget run that the new plan names. The plan is stored in every checkpoint, so a resumed
run keeps it (one stopped before the re-plan keeps its first plan), and a budgeted run trains the
same weights as the step-budget run its log names last. After the re-plan the step count is
fixed; a host that slows down further costs validations instead (`Deadline`), which leave the
weights as they are.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from llm_from_scratch.training.config import TrainingConfig

# Share of the budget held back: ending early is cheaper than overrunning, and the host's load
# still drifts after the re-plan.
SAFETY_MARGIN = 0.02


@dataclass(frozen=True)
class Schedule:
    """The run's length, its warm-up and the intervals that depend on it."""

    steps: int
    warmup_steps: int
    eval_every: int
    save_every: int
    short: bool = False  # trains `training.short_run`'s recipe

    @classmethod
    def of(
        cls,
        cfg: TrainingConfig,
        steps: int | None = None,
        short: bool | None = None,
        warmup: int | None = None,
    ) -> Schedule:
        """The config's schedule, shrunk to `steps` (default: `max_steps`, unchanged). `short`:
        the recipe, default: `training.short_run`'s for a run of at most its `max_steps`, which
        takes its shares of the steps for warm-up and snapshots. `warmup`: a warm-up kept from an
        earlier plan instead of the one `steps` implies."""
        schedule = cls._of(cfg, steps, short)
        return schedule if warmup is None else replace(schedule, warmup_steps=warmup)

    @classmethod
    def _of(cls, cfg: TrainingConfig, steps: int | None, short: bool | None) -> Schedule:
        steps = cfg.max_steps if steps is None else steps
        if short is None:
            short = cfg.short_run is not None and steps <= cfg.short_run.max_steps
        if short:
            recipe = cfg.short_run
            assert recipe is not None, "a short schedule needs training.short_run"
            save_every = max(1, round(steps * recipe.save_every))
            return cls(steps, round(steps * recipe.warmup), cfg.eval_every, save_every, short=True)
        if steps == cfg.max_steps:
            return cls(steps, cfg.warmup_steps, cfg.eval_every, cfg.save_every)
        scale = steps / cfg.max_steps

        def shrunk(interval: int) -> int:
            return max(1, round(interval * scale))

        # Long enough for the re-plan to time the run's own steps, where the recipe warms up that
        # long at all: a probe of a few steps misjudges even a short run.
        timeable = min(PROBE_WARMUP + MIN_TIMED_STEPS, cfg.warmup_steps, steps // 2)
        warmup = max(shrunk(cfg.warmup_steps), timeable)
        return cls(steps, warmup, cfg.eval_every, shrunk(cfg.save_every))

    def overrides(self, cfg: TrainingConfig) -> str:
        """The command-line overrides of the step-budget run that trains exactly this schedule."""
        budgetless = f"training.max_time=null training.max_steps={self.steps}"
        if self.short:  # its warm-up and snapshots follow from the step count
            recipe = cfg.short_run
            assert recipe is not None, "a short schedule needs training.short_run"
            if self.steps > recipe.max_steps:  # more steps than a step budget gives the recipe
                budgetless += f" training.short_run.max_steps={self.steps}"
            if self.warmup_steps == Schedule.of(cfg, self.steps, short=True).warmup_steps:
                return budgetless
            # a re-planned run kept the warm-up of its first plan; this share rounds back to it
            return f"{budgetless} training.short_run.warmup={self.warmup_steps / self.steps!r}"
        overrides = (
            f"{budgetless} training.warmup_steps={self.warmup_steps} "
            f"training.save_every={self.save_every}"
        )
        if Schedule.of(cfg, self.steps).short:  # that many steps would take the short recipe
            overrides += " training.short_run=null"
        return overrides

    def validations(self) -> int:
        """Dev evaluations in the run: every `eval_every` steps and at the last step."""
        return math.ceil(self.steps / self.eval_every)

    def saves(self) -> int:
        return math.ceil(self.steps / self.save_every)


@dataclass(frozen=True)
class Costs:
    """Seconds each part of a run takes, measured by the trainer's probe."""

    step: float
    validation: float
    save: float  # last.pt and a snapshot
    averaging: float  # averaged.pt from the snapshots, and its dev evaluation
    final_test: float = 0.0  # the final model's greedy translation of the test split


def run_seconds(schedule: Schedule, costs: Costs) -> float:
    """How long training `schedule` takes at `costs`."""
    return (
        schedule.steps * costs.step
        + schedule.validations() * costs.validation
        + schedule.saves() * costs.save
        + costs.averaging
        + costs.final_test
    )


def plan(cfg: TrainingConfig, seconds_left: float, costs: Costs, short: bool = False) -> Schedule:
    """The longest schedule of a recipe (the default, or `training.short_run`'s) that fits
    `seconds_left` (one step at least): at most `max_steps`, unless the budget switched the run
    to the short recipe."""
    available = seconds_left * (1 - SAFETY_MARGIN)
    steps = _longest(
        1,
        _most_steps(cfg, short, available, costs),
        lambda steps: run_seconds(Schedule.of(cfg, steps, short), costs) <= available,
    )
    return Schedule.of(cfg, steps, short)


def replan(
    cfg: TrainingConfig, current: Schedule, done: int, seconds_left: float, costs: Costs
) -> Schedule:
    """The longest schedule of `current`'s recipe and warm-up whose steps after the `done` ones
    fit `seconds_left` at `costs` (one more step at least)."""
    available = seconds_left * (1 - SAFETY_MARGIN)

    def of(steps: int) -> Schedule:
        return Schedule.of(cfg, steps, current.short, warmup=current.warmup_steps)

    def remaining_seconds(schedule: Schedule) -> float:
        spent = (
            done * costs.step
            + done // schedule.eval_every * costs.validation
            + done // schedule.save_every * costs.save
        )
        return run_seconds(schedule, costs) - spent

    most = max(_most_steps(cfg, current.short, available, costs, done), done + 1)
    return of(_longest(done + 1, most, lambda steps: remaining_seconds(of(steps)) <= available))


@dataclass(frozen=True)
class Deadline:
    """The budget's end on the trainer's clock and the probe's costs. The load of a host can
    still drift after the re-plan; validations do not change the weights, so the trainer skips
    one that the rest of the run would no longer fit beside (`fits_validation`), and the run
    stays the step-budget run its log names. A validation is priced as the probe rehearsed it,
    not as the run's first ones took: an early model's outputs run long."""

    ends_at: float
    costs: Costs

    def fits_validation(self, now: float, schedule: Schedule, done: int, step: float) -> bool:
        """Whether a validation now, after `done` steps of `schedule`, still leaves time for its
        other steps at `step` seconds each, their saves, the last validation, the averaging and
        the test decoding."""
        costs = self.costs
        steps_left = schedule.steps - done
        saves_left = schedule.saves() - done // schedule.save_every
        rest = (
            steps_left * step
            + saves_left * costs.save
            + costs.validation
            + costs.averaging
            + costs.final_test
        )
        return now + costs.validation + rest <= self.ends_at


def _most_steps(
    cfg: TrainingConfig, short: bool, available: float, costs: Costs, done: int = 0
) -> int:
    """`max_steps`, or for a run the budget switched to the short recipe the `done` steps and
    those whose updates alone take `available`."""
    if short and not Schedule.of(cfg).short:
        return done + max(1, math.floor(available / max(costs.step, 1e-9)))
    return cfg.max_steps


def _longest(low: int, high: int, fits: Callable[[int], bool]) -> int:
    """The largest step count in [low, high] that `fits` (which holds up to some count), or
    `low` where none does."""
    if fits(high):
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


# Untimed first updates: the allocator and kernel selection make them slower than the run's
# steady steps (a compiled step's compilations are paid before them: `Learner.warm_up`).
PROBE_WARMUP = 4
PROBE_STEPS = 16
# The fewest of its own updates, after its first `PROBE_WARMUP`, that a run plans again from: a
# warm-up shorter than that keeps the probe's plan.
MIN_TIMED_STEPS = 4


def measure_costs(
    run_step: Callable[[], int],
    rehearse_validation: Callable[[], None],
    save: Callable[[], None],
    keep_snapshots: int,
    clock: Callable[[], float],
    test_share: float = 0.0,
) -> tuple[Costs, float]:
    """Time `PROBE_STEPS` updates (`run_step` returns the tokens it trained on), a validation
    and a save; return the costs and the training tokens per second. `test_share`: what the
    final test decoding costs, in validations."""
    for _ in range(PROBE_WARMUP):
        run_step()
    start = clock()
    tokens = sum(run_step() for _ in range(PROBE_STEPS))
    step = (clock() - start) / PROBE_STEPS
    start = clock()
    rehearse_validation()
    validation = clock() - start
    start = clock()
    save()
    save_seconds = clock() - start
    # Averaging reads the kept snapshots (about as long as writing them) and validates once.
    averaging = validation + keep_snapshots * save_seconds if keep_snapshots >= 2 else 0.0
    costs = Costs(
        step=step,
        validation=validation,
        save=save_seconds,
        averaging=averaging,
        final_test=validation * test_share,
    )
    return costs, tokens / max(step * PROBE_STEPS, 1e-9)


def describe(
    schedule: Schedule, full: Schedule, budget: float, tokens_per_second: float, cfg: TrainingConfig
) -> str:
    """The log line of a plan."""
    budget_and_speed = f"{format_duration(budget)} at {tokens_per_second / 1000:.1f}k tokens/s"
    if schedule == full:
        return f"all {full.steps:,} steps fit {budget_and_speed}"
    if schedule.short:
        planned = (
            f"planned {schedule.steps:,} steps of the short recipe (training.short_run) to fit "
            f"{budget_and_speed}, where {full.steps:,} of the default's do not"
        )
    else:
        planned = f"planned {schedule.steps:,} of {full.steps:,} steps to fit {budget_and_speed}"
    return f"{planned}; the same run without a budget: {schedule.overrides(cfg)}"


def slower_clock(
    slowdown: float, origin: float, clock: Callable[[], float] = time.perf_counter
) -> Callable[[], float]:
    """`clock` as a CPU `slowdown` times slower would read it in the same run, from `origin` on
    (`training.budget_slowdown`). Every cost the planner times, the setup before it and the
    deadline scale alike, so the plan is that CPU's, up to the ratio's accuracy."""

    def slower() -> float:
        return origin + (clock() - origin) * slowdown

    return slower


def format_duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
