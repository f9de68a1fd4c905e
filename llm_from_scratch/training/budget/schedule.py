"""A run that fits a wall-clock budget (`training.max_time`): a schedule planned, not cut off.

After a short timed probe the planner (`planner.py`) fixes the run's rung and step count: the
most steps whose training, validations, checkpoint saves, final averaging and final test decoding
fit in what is left of the budget. The budget alone bounds them: `training.max_steps` caps a
budgeted run only where the command sets it (`plan.Choices`); otherwise it is the length the
recipe's warm-up and snapshot interval are set for, and they shrink or grow in proportion (the
warm-up to no fewer steps than the re-plan needs to time), so the learning rate still reaches
zero at the last step and the averaged snapshots cover the same fraction of the run; validation
keeps its interval. A run of `training.short_run` takes its warm-up and snapshots as shares of
its steps, whether the budget or `training.max_steps` made it short.
At the warm-up's last step the trainer plans once more, from the run's own step, validation and
save times (`replan`): a probe of a few steps misjudges a run of thousands when the host's load
drifts, and a stand-in's validation and save are not the run's (a warm-up that ends before the
first validation ends with one: an early model's outputs run long). Until the
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
from dataclasses import dataclass

from llm_from_scratch.training.config import TrainingConfig
from llm_from_scratch.training.plan import MIN_TIMED_STEPS, PROBE_WARMUP, Schedule

__all__ = ["MIN_TIMED_STEPS", "PROBE_WARMUP", "Schedule"]  # where the plan's modules find them

# Share of the budget held back: ending early is cheaper than overrunning, and the host's load
# still drifts after the re-plan.
SAFETY_MARGIN = 0.02


@dataclass(frozen=True)
class Rehearsal:
    """A validation's two parts, each rehearsed once to time it: `scoring`, what a validation
    does besides decoding (the dev loss pass); `decoding`, its greedy translation of the dev
    sentences, which the final test decoding repeats on more sentences."""

    scoring: Callable[[], None]
    decoding: Callable[[], None]


NO_REHEARSAL = Rehearsal(lambda: None, lambda: None)  # a rank that does not validate


@dataclass(frozen=True)
class Costs:
    """Seconds each part of a run takes, measured by the trainer's probe."""

    step: float
    validation: float
    save: float  # last.pt and a snapshot
    averaging: float  # averaged.pt from the snapshots, and its dev evaluation
    final_test: float = 0.0  # the final model's greedy translation of the test split

    def measured(
        self, step: float, validation: float | None, save: float | None, keep_snapshots: int
    ) -> Costs:
        """These costs with the run's own step, validation and save times (None: none measured
        yet, the probe's stays). The averaging and the test decoding scale with them as
        `measure_costs` priced them."""
        validation = self.validation if validation is None else validation
        save = self.save if save is None else save
        averaging = validation + keep_snapshots * save if self.averaging else 0.0
        test_share = self.final_test / self.validation if self.validation else 0.0
        return Costs(step, validation, save, averaging, validation * test_share)


def run_seconds(schedule: Schedule, costs: Costs) -> float:
    """How long training `schedule` takes at `costs`."""
    return (
        schedule.steps * costs.step
        + schedule.validations() * costs.validation
        + schedule.saves() * costs.save
        + costs.averaging
        + costs.final_test
    )


def plan(
    cfg: TrainingConfig,
    seconds_left: float,
    costs: Costs,
    short: bool = False,
    rung: str | None = None,
    cap: int | None = None,
) -> Schedule:
    """The longest schedule of a rung (`short`: `training.short_run`'s; `rung`: a ladder rung's;
    neither: the config's recipe) that fits `seconds_left` (one step at least), and at most
    `cap` steps."""
    available = seconds_left * (1 - SAFETY_MARGIN)

    def of(steps: int) -> Schedule:
        return Schedule.of(cfg, steps, short, rung=rung)

    most = _most_steps(available, costs, cap)
    return of(_longest(1, most, lambda steps: run_seconds(of(steps), costs) <= available))


def replan(
    cfg: TrainingConfig,
    current: Schedule,
    done: int,
    seconds_left: float,
    costs: Costs,
    cap: int | None = None,
) -> Schedule:
    """The longest schedule of `current`'s rung and warm-up whose steps after the `done` ones
    fit `seconds_left` at `costs` (one more step at least), and at most `cap` steps; and no
    shorter than the steps taken keep it the step-budget run of its count (`settled_from`: a
    wsd run whose host slowed down keeps the count whose decay has not begun, and its deadline
    skips validations instead)."""
    available = seconds_left * (1 - SAFETY_MARGIN)

    def of(steps: int) -> Schedule:
        return Schedule.of(
            cfg, steps, current.short, warmup=current.warmup_steps, rung=current.rung
        )

    def remaining_seconds(schedule: Schedule) -> float:
        spent = (
            done * costs.step
            + done // schedule.eval_every * costs.validation
            + done // schedule.save_every * costs.save
        )
        return run_seconds(schedule, costs) - spent

    most = max(_most_steps(available, costs, cap, done), done + 1)
    longest = _longest(done + 1, most, lambda steps: remaining_seconds(of(steps)) <= available)
    keep = cfg.keep_snapshots
    unsettled = _longest(done, current.steps, lambda steps: of(steps).settled_from(keep) < done)
    least = unsettled + 1 if of(unsettled).settled_from(keep) < done else unsettled
    return of(max(longest, min(least, current.steps)))


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
        other steps at `step` seconds each, their saves, the last validation (unless this is
        it), the averaging and the test decoding."""
        costs = self.costs
        steps_left = schedule.steps - done
        saves_left = schedule.saves() - done // schedule.save_every
        rest = (
            steps_left * step
            + saves_left * costs.save
            + (costs.validation if steps_left > 0 else 0.0)
            + costs.averaging
            + costs.final_test
        )
        return now + costs.validation + rest <= self.ends_at


def _most_steps(available: float, costs: Costs, cap: int | None, done: int = 0) -> int:
    """The `done` steps and those whose updates alone take `available`, at most `cap`."""
    most = done + max(1, math.floor(available / max(costs.step, 1e-9)))
    return most if cap is None else max(min(most, cap), done + 1)


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


PROBE_STEPS = 16


def measure_costs(
    run_step: Callable[[], int],
    rehearsal: Rehearsal,
    save: Callable[[], None],
    keep_snapshots: int,
    clock: Callable[[], float],
    test_share: float = 0.0,
) -> tuple[Costs, float]:
    """Time `PROBE_STEPS` updates (`run_step` returns the tokens it trained on), a validation
    (`rehearsal`'s two parts) and a save; return the costs and the training tokens per second.
    `test_share`: what the final test decoding costs, in validation decodings."""
    for _ in range(PROBE_WARMUP):
        run_step()
    start = clock()
    tokens = sum(run_step() for _ in range(PROBE_STEPS))
    step = (clock() - start) / PROBE_STEPS
    start = clock()
    rehearsal.scoring()
    scoring = clock() - start
    start = clock()
    rehearsal.decoding()
    decoding = clock() - start
    start = clock()
    save()
    save_seconds = clock() - start
    validation = scoring + decoding
    # Averaging reads the kept snapshots (about as long as writing them) and validates once.
    averaging = validation + keep_snapshots * save_seconds if keep_snapshots >= 2 else 0.0
    costs = Costs(
        step=step,
        validation=validation,
        save=save_seconds,
        averaging=averaging,
        final_test=decoding * test_share,
    )
    return costs, tokens / max(step * PROBE_STEPS, 1e-9)


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
