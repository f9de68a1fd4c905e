"""Training statistics: one step's, and the window of steps a log line averages (the run's own
step time, which a time budget plans again from, is `budget.timing.RunTiming`); and a step's
batches, grouped from the loader's (`step_batches`: the trainer's and the probe's).

A step's loss, gradient norm and skip flag stay on the device: reading one on the host would make
the host wait for the device's queued work every step. The window keeps them as they are and
reads all of them in one transfer when it is settled, at a log step (or before a validation or a
save, which wait for the device anyway). `RunLogger` writes what is logged to TensorBoard.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from llm_from_scratch.data.batch import Batch
from llm_from_scratch.errors import UserError
from llm_from_scratch.training.state import Progress

logger = logging.getLogger(__name__)


class TrainingError(UserError):
    """Training cannot go on (e.g. the loss keeps being non-finite)."""


@dataclass(frozen=True)
class StepBatches:
    """This rank's micro-batches of one optimizer step, and the target tokens of the step on
    every rank, which divide its summed loss (`TokenBudgetBatchSampler.global_target_tokens`)."""

    batches: list[Batch]
    global_target_tokens: int

    @classmethod
    def alone(cls, batches: list[Batch]) -> StepBatches:
        """`batches` as the whole step of a single process."""
        return cls(batches, sum(batch.tgt_tokens for batch in batches))


def step_batches(
    open_loader: Callable[[int, int], DataLoader],
    progress: Progress,
    accumulation: int,
    distributed: bool,
    whole_steps: bool = False,
) -> Iterator[StepBatches]:
    """Each optimizer step's batches: groups of `accumulation` batches, epoch after epoch, from
    `progress`'s position, which counts each group done as it is handed out. `open_loader(epoch,
    start_batch)` gives this rank's batches of an epoch. An epoch's remainder makes one smaller
    step, unless `whole_steps` (a probe that times steps skips it)."""
    while True:
        loader = open_loader(progress.epoch, progress.batch_in_epoch)
        sampler, group = loader.batch_sampler, []
        for batch in loader:
            group.append(batch)
            if len(group) == accumulation:
                yield _counted_step(sampler, group, progress, distributed)
                group = []
        if group and not whole_steps:
            yield _counted_step(sampler, group, progress, distributed)
        progress.epoch += 1
        progress.batch_in_epoch = 0


def _counted_step(
    sampler: Any, group: list[Batch], progress: Progress, distributed: bool
) -> StepBatches:
    """`group`, the next of this rank's batches, as one step's, which it counts done."""
    first = progress.batch_in_epoch
    progress.batch_in_epoch += len(group)
    if not distributed:
        return StepBatches.alone(group)
    return StepBatches(group, sampler.global_target_tokens(first, len(group)))


@dataclass
class StepStats:
    loss_sum: torch.Tensor  # (device) label-smoothed loss summed over this rank's target tokens
    grad_norm: torch.Tensor  # (device) before clipping
    skipped: torch.Tensor  # (device, bool) non-finite gradients: the optimizer left the weights
    target_tokens: int
    padded_tokens: int  # source + target positions including padding
    real_tokens: int  # source + target tokens

    @property
    def loss(self) -> float:
        """The loss per target token, read on the host (it waits for the device)."""
        return self.loss_sum.item() / max(self.target_tokens, 1)


@dataclass(frozen=True)
class SettledStep:
    """A step's statistics as read on the host."""

    step: int
    loss: float  # per target token
    grad_norm: float
    skipped: bool


@dataclass
class LogWindow:
    """Training statistics since the last log line, averaged when it is written."""

    start: float = field(default_factory=time.perf_counter)
    steps: int = 0  # updates taken (skipped ones left out)
    loss_sum: float = 0.0
    grad_norm_sum: float = 0.0
    target_tokens: int = 0
    real_tokens: int = 0
    padded_tokens: int = 0
    pending: list[tuple[int, StepStats]] = field(default_factory=list)  # added, not yet read

    def add(self, step: int, stats: StepStats) -> None:
        self.pending.append((step, stats))

    def settle(self) -> list[SettledStep]:
        """Read the pending steps in one transfer, add the updates taken (a skipped one's
        non-finite loss would poison the averages) and return them all, in order."""
        if not self.pending:
            return []
        values = torch.stack(
            [
                torch.stack([s.loss_sum.double(), s.grad_norm.double(), s.skipped.double()])
                for _, s in self.pending
            ]
        ).tolist()
        settled = []
        for (step, stats), (loss_sum, grad_norm, skipped) in zip(self.pending, values, strict=True):
            settled.append(
                SettledStep(step, loss_sum / max(stats.target_tokens, 1), grad_norm, bool(skipped))
            )
            if skipped:
                continue
            self.steps += 1
            self.loss_sum += loss_sum
            self.grad_norm_sum += grad_norm
            self.target_tokens += stats.target_tokens
            self.real_tokens += stats.real_tokens
            self.padded_tokens += stats.padded_tokens
        self.pending = []
        return settled

    def summary(self, world_size: int) -> dict[str, float]:
        """The averages of the settled steps (`settle` first)."""
        seconds = max(time.perf_counter() - self.start, 1e-9)
        return {
            "train/loss": self.loss_sum / max(self.target_tokens, 1),
            "train/grad_norm": self.grad_norm_sum / max(self.steps, 1),
            "train/tokens_per_second": self.real_tokens * world_size / seconds,
            "train/padding_fraction": 1 - self.real_tokens / max(self.padded_tokens, 1),
        }


def guard(settled: list[SettledStep], progress: Progress, max_nonfinite: int) -> None:
    """Warn of each skipped step in `settled` (steps as `LogWindow.settle` read them), and stop
    the run at `max_nonfinite` of them in a row."""
    for stats in settled:
        progress.nonfinite_in_a_row = progress.nonfinite_in_a_row + 1 if stats.skipped else 0
        if stats.skipped:
            logger.warning(
                f"step {stats.step}: non-finite loss or gradient norm (loss {stats.loss}, "
                f"grad norm {stats.grad_norm}); update skipped"
            )
        if progress.nonfinite_in_a_row >= max_nonfinite:
            raise TrainingError(
                f"{progress.nonfinite_in_a_row} non-finite updates in a row at step "
                f"{stats.step}: lower training.lr, raise training.warmup_steps, or use "
                "training.precision=fp32"
            )


class RunLogger:
    """TensorBoard's log of the run, from the main process; every other process gets a silent
    one (`log_dir` None)."""

    def __init__(self, log_dir: Path | None) -> None:
        self.writer = None
        if log_dir is not None:
            from torch.utils.tensorboard import SummaryWriter  # slow import; main process only

            self.writer = SummaryWriter(str(log_dir))

    def scalars(self, values: dict[str, float], step: int) -> None:
        if self.writer is not None:
            for tag, value in values.items():
                self.writer.add_scalar(tag, value, step)

    def text(self, tag: str, markdown: str, step: int) -> None:
        if self.writer is not None:
            self.writer.add_text(tag, markdown, step)

    def image(self, tag: str, image: np.ndarray, step: int) -> None:
        """An (height, width, 3) uint8 image, e.g. a rendered figure."""
        if self.writer is not None:
            self.writer.add_image(tag, image, step, dataformats="HWC")

    def hparams(self, hparams: dict[str, Any], metrics: dict[str, float]) -> None:
        if self.writer is not None:
            self.writer.add_hparams(hparams, metrics, run_name="hparams")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
