"""The updates between two log steps never read a tensor on the host: on a GPU each read waits for
all the work queued on it, so the host could no longer run ahead of the device. On a CPU every
tensor is on the host, so the test counts the calls that would be reads."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from llm_from_scratch.data.batch import Batch
from llm_from_scratch.training.trainer import Trainer

from .test_trainer import fp32

# Tensor methods that hand a value to Python: each copies it to the host and waits for it.
READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__")
# The token counts of a batch as the loader made it, on the host (pinned, on CUDA), before its
# copy to the device: reading them waits for nothing.
HOST_BATCH_COUNTS = {Batch.src_tokens.fget.__code__, Batch.tgt_tokens.fget.__code__}


def _reads_a_host_batch() -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code in HOST_BATCH_COUNTS:
            return True
        frame = frame.f_back
    return False


class ReadCounter:
    """Counts the reads of each log step, and those between the first log step and the last."""

    def __init__(self) -> None:
        self.in_log_step = False
        self.counting = False  # between the first log step and the last
        self.between: list[str] = []  # the methods read
        self.per_log_step: list[int] = []

    def record(self, name: str) -> None:
        if _reads_a_host_batch():
            return
        if self.in_log_step:
            self.per_log_step[-1] += 1
        elif self.counting:
            self.between.append(name)

    def log_step_starts(self) -> None:
        self.in_log_step = True
        self.per_log_step.append(0)

    def log_step_ends(self) -> None:
        self.in_log_step = False
        # After the last, the run stops: its validation and save read what they show and save.
        self.counting = len(self.per_log_step) < LAST_LOG_STEP


@contextmanager
def counting_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReadCounter]:
    counter = ReadCounter()
    for name in READS:
        original = getattr(torch.Tensor, name)

        def read(self, *args, _original=original, _name=name, **kwargs):
            counter.record(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, read)
    log_step = Trainer._log_step

    def counted_log_step(trainer, *args):
        counter.log_step_starts()
        try:
            return log_step(trainer, *args)
        finally:
            counter.log_step_ends()

    monkeypatch.setattr(Trainer, "_log_step", counted_log_step)
    yield counter
    monkeypatch.undo()


LOG_EVERY, STEPS = 5, 15
LAST_LOG_STEP = STEPS // LOG_EVERY + 1  # step 1 is logged too


def test_no_update_between_log_steps_reads_a_tensor_on_the_host(copy_task, tmp_path, monkeypatch):
    config, data, _ = copy_task
    cfg = fp32(
        config, tmp_path, max_steps=STEPS, log_every=LOG_EVERY, eval_every=1000, save_every=1000
    )
    trainer = Trainer(cfg, data)
    with counting_reads(monkeypatch) as counter:
        trainer.fit()
    assert counter.per_log_step == [1] * LAST_LOG_STEP  # the window's values, in one transfer
    assert counter.between == []
