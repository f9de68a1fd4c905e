"""Training statistics: one step's, the window of steps a log line averages, and the run's
own step time that a time budget plans again from."""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class StepStats:
    loss: float  # label-smoothed loss per target token
    grad_norm: float
    target_tokens: int
    padded_tokens: int  # source + target positions including padding
    real_tokens: int  # source + target tokens
    skipped: bool


@dataclass
class LogWindow:
    """Training statistics since the last log line, averaged when it is written."""

    start: float = field(default_factory=time.perf_counter)
    steps: int = 0
    loss_sum: float = 0.0  # per-token loss weighted by target tokens
    grad_norm_sum: float = 0.0
    target_tokens: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0

    def add(self, stats: StepStats) -> None:
        if stats.skipped:  # a non-finite loss would poison the averages; the guard logs it
            return
        self.steps += 1
        self.loss_sum += stats.loss * stats.target_tokens
        self.grad_norm_sum += stats.grad_norm
        self.target_tokens += stats.target_tokens
        self.real_tokens += stats.real_tokens
        self.padded_tokens += stats.padded_tokens

    def summary(self, world_size: int) -> dict[str, float]:
        seconds = max(time.perf_counter() - self.start, 1e-9)
        return {
            "train/loss": self.loss_sum / max(self.target_tokens, 1),
            "train/grad_norm": self.grad_norm_sum / max(self.steps, 1),
            "train/tokens_per_second": self.real_tokens * world_size / seconds,
            "train/padding_fraction": 1 - self.real_tokens / max(self.padded_tokens, 1),
        }


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

    def add(self, step: int, now: float, tokens: int) -> None:
        if step == self.from_step:
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
