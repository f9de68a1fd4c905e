"""What a time budget (`training.max_time`) asks of the loop while it trains: `TimeBudget`, the
`pacing.Pacing` of a budgeted run, times the run's own steps, validations and saves
(`RunTiming`), plans the rest of the run again at the warm-up's end from them (the loop asks
`replan_due` and follows `replanned`), and skips a validation that would push the run past the
deadline. A schedule whose rate stays at its peak after the warm-up (`training.schedule=wsd`)
is planned again at each validation too, until its decay or its averaged snapshots begin
(`Schedule.settled_from`), from the updates since the last plan: a host that speeds up or slows
down over hours is followed, and the run is still the step-budget run its log names last."""

from __future__ import annotations

import logging
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from llm_from_scratch.training.budget.schedule import (
    MIN_TIMED_STEPS,
    PROBE_WARMUP,
    Costs,
    Deadline,
    Schedule,
)
from llm_from_scratch.training.pacing import Pacing

logger = logging.getLogger(__name__)

# The planner's re-plan at the warm-up's end: (schedule, steps done, the run's own costs, its
# training tokens a second) -> schedule.
Replan = Callable[[Schedule, int, Costs, float], Schedule]


# The re-plan's step time is the median of the warm-up's windows of this many updates: a minute
# of another process on the cores slows a few windows, and the median leaves them out, where a
# mean would plan the whole run at the disturbed pace.
WINDOW_STEPS = 25
# The fewest windows a median is taken of; fewer: the mean of the updates timed.
MIN_WINDOWS = 3


@dataclass
class RunTiming:
    """The run's own updates since `from_step`, for the re-plan: the first ones, which allocate
    memory and pick kernels, are left out as the probe leaves its first ones out."""

    from_step: int
    start: float | None = None
    steps: int = 0
    paused: float = 0.0  # seconds of validations and saves, which the re-plan prices apart
    tokens: int = 0  # trained on
    windows: list[float] = field(default_factory=list)  # seconds an update, each WINDOW_STEPS
    _mark: tuple[int, float, float] | None = None  # steps, time and pauses at `recent_step`
    _window_mark: tuple[float, float] = (0.0, 0.0)  # time and pauses at the last window's end
    # windows, steps, time and pauses at the last re-plan
    _replan_mark: tuple[int, int, float, float] | None = None

    def needs_time(self, step: int) -> bool:
        """Whether `add` needs the time at the end of `step`: where the timing starts, and where
        a window ends."""
        after = step - self.from_step
        return after == 0 or (after > 0 and after % WINDOW_STEPS == 0)

    def add(self, step: int, now: float | None, tokens: int) -> None:
        """Count `step`, which ended at `now` (the device's work done; None: not read, which
        only the steps `needs_time` names need)."""
        if step == self.from_step:
            assert now is not None
            self.start = now
            self._window_mark = (now, self.paused)
        elif step > self.from_step:
            self.steps += 1
            self.tokens += tokens
            if now is not None and self.steps % WINDOW_STEPS == 0:
                since, paused = self._window_mark
                self.windows.append((now - since - (self.paused - paused)) / WINDOW_STEPS)
                self._window_mark = (now, self.paused)

    def typical_step(self, now: float) -> float:
        """Seconds an update takes, pauses left out, since the last `mark` (else since the
        timing started): the median of the windows, or with fewer than `MIN_WINDOWS` of them
        the mean (`now` its end); too few updates since the mark for either: since the start."""
        assert self.start is not None and self.steps
        windows, steps, since, paused = self._replan_mark or (0, 0, self.start, 0.0)
        if self.steps - steps < MIN_TIMED_STEPS:
            windows, steps, since, paused = 0, 0, self.start, 0.0
        if len(self.windows) - windows >= MIN_WINDOWS:
            return statistics.median(self.windows[windows:])
        return (now - since - (self.paused - paused)) / (self.steps - steps)

    def mark(self, now: float) -> None:
        """A re-plan at `now`: the next one times the updates after it."""
        self._replan_mark = (len(self.windows), self.steps, now, self.paused)

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


class TimeBudget(Pacing):
    """A time budget's, from the run's own updates after the step it starts from (the first
    `PROBE_WARMUP` of them left out, as the probe leaves its first out), validations and saves.
    `replan`: the planner's re-plan at the warm-up's end (and, for wsd, at the validations
    before the schedule settles); `deadline`: the budget's end and the probe's costs;
    `early_stopping`: validations steer the run (`training.patience`), so none is skipped;
    `keep_snapshots`: the snapshots averaged, which price the averaging."""

    def __init__(
        self,
        clock: Callable[[], float],
        replan: Replan,
        deadline: Deadline,
        early_stopping: bool,
        keep_snapshots: int,
    ) -> None:
        super().__init__(clock)
        self.replan = replan
        self.replans = 0  # made so far
        self.deadline = deadline
        self.early_stopping = early_stopping
        self.keep_snapshots = keep_snapshots
        self.timing = RunTiming(PROBE_WARMUP)
        self.validations: list[float] = []  # the run's own, in seconds
        self.saves: list[float] = []

    def start(self, step: int) -> None:
        self.timing = RunTiming(step + PROBE_WARMUP)

    def needs_time(self, step: int, schedule: Schedule) -> bool:
        return self.replan_due(step, schedule) or self.timing.needs_time(step)

    def step_done(self, step: int, now: float | None, tokens: int) -> None:
        self.timing.add(step, now, tokens)

    def replan_due(self, step: int, schedule: Schedule) -> bool:
        if not self.replans:
            return step == schedule.warmup_steps
        if not schedule.decay_steps:  # final: the rate depends on the count after the warm-up
            return False
        settled = schedule.settled_from(self.keep_snapshots)
        return step % schedule.eval_every == 0 and step <= settled

    def replanned(self, schedule: Schedule, step: int, now: float) -> Schedule:
        """The re-plan after `step` steps of `schedule`: the step count only; the warm-up, whose
        learning rates the steps taken had in either plan, stays. Its costs are the run's own:
        its updates since the first few, or since the last re-plan
        (`RunTiming.typical_step`), and the median of its validations (the loop validates at
        the warm-up's end where none came before) and of its saves (a stand-in's are not the
        run's); the deadline prices what is left with them. A warm-up too short to time after
        the first, slower, updates keeps the probe's plan. Any schedule but wsd is final after
        this first re-plan; wsd's is made again at its validations until it settles
        (`replan_due`)."""
        self.replans += 1
        timing = self.timing
        if timing.start is None or timing.steps < MIN_TIMED_STEPS:
            return schedule
        step_seconds = timing.typical_step(now)
        timing.mark(now)
        costs = self.deadline.costs.measured(
            step_seconds,
            _typical(self.validations),
            _typical(self.saves),
            self.keep_snapshots,
        )
        self.deadline = replace(self.deadline, costs=costs)
        return self.replan(
            schedule, step, costs, timing.tokens / max(step_seconds * timing.steps, 1e-9)
        )

    def validation_fits(self, now: float, schedule: Schedule, step: int) -> bool:
        """Whether the validation due now leaves the rest of the run its time, at the step time
        since the last one; after the re-plan (which fits the steps to the time before it) and
        without early stopping, a validation that does not is skipped, unless the plan is made
        again right after it (wsd's, before it settles): that re-plan fits the steps instead."""
        step_seconds = self.timing.recent_step(now)  # at every validation: it times from the last
        if not self.replans or self.early_stopping or step_seconds is None:
            return True
        if self.replan_due(step, schedule):
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

    def validated(self, seconds: float) -> None:
        self.validations.append(seconds)
        self.timing.pause(seconds)

    def saved(self, seconds: float) -> None:
        self.saves.append(seconds)
        self.timing.pause(seconds)


def _typical(seconds: list[float]) -> float | None:
    """The median: one validation or save that another process held up does not price them
    all, as one window does not price the updates."""
    return statistics.median(seconds) if seconds else None
