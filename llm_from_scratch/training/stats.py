"""Training statistics: one step's, and the window of steps a log line averages (the run's own
step time, which a time budget plans again from, is `budget.timing.RunTiming`)."""

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
