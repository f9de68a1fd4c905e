"""What a run's budget asks of the loop, at its few points: `Pacing`, a step budget's, asks
nothing but keeps the run's clock. A time budget's (`budget/timing.py` `TimeBudget`, a layer
above) times the run's own steps, validations and saves, plans the rest of the run again at the
warm-up's end, and skips a validation that would push the run past the deadline: the loop asks
`replan_due` and follows `replanned`, so that the re-plan shows where it happens."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from llm_from_scratch.device import synchronize
from llm_from_scratch.training.plan import Schedule


class Pacing:
    """A step budget's: the run's clock, and nothing asked of the loop. The loop calls `start`
    as it starts, `needs_time` and `step_done` after each update, `replan_due` at the end of a
    step (and `replanned` after that step's validation, before its save), `validation_fits`
    before a validation, and `validated` and `saved` after each."""

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

    def step_done(self, step: int, now: float | None, tokens: int) -> None:
        """`step` trained on `tokens` and ended at `now` (None: not read)."""

    def replan_due(self, step: int, schedule: Schedule) -> bool:
        """Whether the rest of the run is planned again after `step`."""
        return False

    def replanned(self, schedule: Schedule, step: int, now: float) -> Schedule:
        """The schedule for the rest of the run after `step` steps of `schedule`."""
        return schedule

    def validation_fits(self, now: float, schedule: Schedule, step: int) -> bool:
        """Whether the validation due after `step` steps of `schedule` may run."""
        return True

    def validated(self, seconds: float) -> None:
        """A validation took `seconds`, which are no update's."""

    def saved(self, seconds: float) -> None:
        """A save (a snapshot and `last.pt`) took `seconds`, which are no update's."""
