"""What the run's budget asks of the loop while it trains, behind one object the loop calls at
its few points: `Budget`, a step budget's, asks nothing but keeps the run's clock; `TimeBudget`
(`training.max_time`) times the run's own steps (`RunTiming`), plans the rest of the run again
at the warm-up's end, and skips a validation that would push the run past the deadline."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from llm_from_scratch.device import synchronize
from llm_from_scratch.training.budget.schedule import (
    MIN_TIMED_STEPS,
    PROBE_WARMUP,
    Deadline,
    Schedule,
)

logger = logging.getLogger(__name__)

# The re-plan at the warm-up's end: (schedule, steps done, steps timed, the seconds and tokens
# of those) -> schedule.
Replan = Callable[[Schedule, int, int, float, int], Schedule]


@dataclass
class RunTiming:
    """The run's own updates since `from_step`, for the re-plan: the first ones, which allocate
    memory and pick kernels, are left out as the probe leaves its first ones out."""

    from_step: int
    start: float | None = None
    steps: int = 0
    paused: float = 0.0  # seconds of validations and saves, which the re-plan prices apart
    tokens: int = 0  # trained on
    _mark: tuple[int, float, float] | None = None  # steps, time and pauses at `recent_step`

    def starts_at(self, step: int) -> bool:
        """Whether the timing starts at the end of `step`: `add` then needs the time."""
        return step == self.from_step

    def add(self, step: int, now: float | None, tokens: int) -> None:
        """Count `step`, which ended at `now` (the device's work done; None: not read, which
        only the step the timing starts at needs)."""
        if step == self.from_step:
            assert now is not None
            self.start = now
        elif step > self.from_step:
            self.steps += 1
            self.tokens += tokens

    def pause(self, seconds: float) -> None:
        if self.start is not None:
            self.paused += seconds

    def recent_step(self, now: float) -> float | None:
        """Seconds an update took, pauses left out, since the last call (the first: since the
        timing started); None before two updates are timed."""
        if self.start is None or self.steps < 2:
            return None
        steps, since, paused = self._mark or (0, self.start, 0.0)
        if self.steps == steps:
            return None
        self._mark = (self.steps, now, self.paused)
        return (now - since - (self.paused - paused)) / (self.steps - steps)


class Budget:
    """A step budget's: the run's clock, and nothing asked of the loop. The loop calls
    `start` as it starts, `needs_time` and `step_done` after each update, `validation_fits`
    before a validation and `paused` after a validation or save."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock  # what the run's elapsed time and a time budget read

    def time(self, device: torch.device) -> float:
        """The clock once `device` has done the work queued on it so far."""
        synchronize(device)
        return self.clock()

    def start(self, step: int) -> None:
        """The loop starts (again) after `step` steps."""

    def needs_time(self, step: int, schedule: Schedule) -> bool:
        """Whether `step_done` needs the time at the end of `step`: a read waits for the device."""
        return False

    def step_done(
        self, step: int, now: float | None, tokens: int, schedule: Schedule
    ) -> Schedule | None:
        """`step` trained on `tokens` and ended at `now` (None: not read); a new schedule for
        the rest of the run, or None to keep `schedule`."""
        return None

    def validation_fits(self, now: float, schedule: Schedule, step: int) -> bool:
        """Whether the validation due after `step` steps of `schedule` may run."""
        return True

    def paused(self, seconds: float) -> None:
        """A validation or save took `seconds`, which are no update's."""


class TimeBudget(Budget):
    """A time budget's, from the run's own updates after the step it starts from (the first
    `PROBE_WARMUP` of them left out, as the probe leaves its first out). `replan`: the planner's
    re-plan at the warm-up's end, made once; `deadline`: the budget's end; `early_stopping`:
    validations steer the run (`training.patience`), so none is skipped."""

    def __init__(
        self,
        clock: Callable[[], float],
        replan: Replan,
        deadline: Deadline,
        early_stopping: bool,
    ) -> None:
        super().__init__(clock)
        self.replan: Replan | None = replan
        self.deadline = deadline
        self.early_stopping = early_stopping
        self.timing = RunTiming(PROBE_WARMUP)

    def start(self, step: int) -> None:
        self.timing = RunTiming(step + PROBE_WARMUP)

    def needs_time(self, step: int, schedule: Schedule) -> bool:
        return self._replan_due(step, schedule) or self.timing.starts_at(step)

    def step_done(
        self, step: int, now: float | None, tokens: int, schedule: Schedule
    ) -> Schedule | None:
        self.timing.add(step, now, tokens)
        if not self._replan_due(step, schedule):
            return None
        assert now is not None and self.replan is not None
        replanned = self._replanned(schedule, step, now)
        return None if replanned == schedule else replanned

    def _replan_due(self, step: int, schedule: Schedule) -> bool:
        return self.replan is not None and step == schedule.warmup_steps

    def _replanned(self, schedule: Schedule, done: int, now: float) -> Schedule:
        """The re-plan after `done` steps of `schedule`: the step count only; the warm-up, whose
        learning rates the steps taken had in either plan, stays. A warm-up too short to time
        after the first, slower, updates keeps the probe's plan."""
        assert self.replan is not None
        replan, self.replan = self.replan, None  # once: a second start keeps the plan
        timing = self.timing
        if timing.start is None or timing.steps < MIN_TIMED_STEPS:
            return schedule
        seconds = now - timing.start - timing.paused
        return replan(schedule, done, timing.steps, seconds, timing.tokens)

    def validation_fits(self, now: float, schedule: Schedule, step: int) -> bool:
        """Whether the validation due now leaves the rest of the run its time, at the step time
        since the last one; after the re-plan (which fits the steps to the time before it) and
        without early stopping, a validation that does not is skipped."""
        step_seconds = self.timing.recent_step(now)  # at every validation: it times from the last
        if self.replan is not None or self.early_stopping or step_seconds is None:
            return True
        if self.deadline.fits_validation(now, schedule, step, step_seconds):
            return True
        logger.info(
            "step %d: validation skipped to keep the time budget (%.2f s an update since the last "
            "one; the run and its final scoring need the time left)",
            step,
            step_seconds,
        )
        return False

    def paused(self, seconds: float) -> None:
        self.timing.pause(seconds)
