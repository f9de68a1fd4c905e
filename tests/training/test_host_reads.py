"""The updates between two log steps never read a tensor on the host: on a GPU each read waits for
all the work queued on it, so the host could no longer run ahead of the device. On a CPU every
tensor is on the host, so the test counts the calls that would be reads."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from llm_from_scratch.data.batch import Batch
from llm_from_scratch.training.stats import RunLogger
from llm_from_scratch.training.trainer import Trainer

from .test_trainer import fp32

# Tensor methods that hand a value to Python: each copies it to the host and waits for it.
READS = ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__", "__index__")
# The token counts of a batch as the loader made it, on the host (pinned, on CUDA), before its
# copy to the device: reading them waits for nothing.
HOST_BATCH_COUNTS = ("src_tokens", "tgt_tokens")


class ReadCounter(RunLogger):
    """The run's log, counting the reads from each log step's training scalars to the next's:
    the updates between them and the next log step, which reads the window's values."""

    def __init__(self) -> None:
        super().__init__(None)
        self.host_batch = 0  # > 0 while a batch's host token counts are read
        self.log_steps = 0
        self.per_log_step: list[int] = []  # the reads up to each log step after the first
        self.read: list[str] = []  # the methods read since the last log step

    def record(self, name: str) -> None:
        if not self.host_batch and 0 < self.log_steps < LAST_LOG_STEP:
            self.read.append(name)

    def scalars(self, values: dict[str, float], step: int) -> None:
        if "train/loss" not in values:  # a validation's
            return
        if self.log_steps:
            self.per_log_step.append(len(self.read))
        self.log_steps += 1
        self.read = []


@contextmanager
def counting_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReadCounter]:
    counter = ReadCounter()
    for name in READS:
        original = getattr(torch.Tensor, name)

        def read(self, *args, _original=original, _name=name, **kwargs):
            counter.record(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, read)
    for name in HOST_BATCH_COUNTS:
        count = getattr(Batch, name).fget

        def host_count(batch: Batch, _count=count) -> int:
            counter.host_batch += 1
            try:
                return _count(batch)
            finally:
                counter.host_batch -= 1

        monkeypatch.setattr(Batch, name, property(host_count))
    yield counter
    monkeypatch.undo()


LOG_EVERY, STEPS = 5, 15
LAST_LOG_STEP = STEPS // LOG_EVERY + 1  # step 1 is logged too


def test_no_update_between_log_steps_reads_a_tensor_on_the_host(copy_task, tmp_path, monkeypatch):
    config, data, _ = copy_task
    # no save between the log steps: cosine's (wsd would snapshot its decay's steps)
    cfg = fp32(
        config, tmp_path, max_steps=STEPS, log_every=LOG_EVERY, eval_every=1000,
        save_every=1000, schedule="cosine",
    )  # fmt: skip
    trainer = Trainer(cfg, data)
    with counting_reads(monkeypatch) as counter:
        trainer.fit(counter)
    # each log step reads its window's values in one transfer, and nothing else reads
    assert counter.per_log_step == [1] * (LAST_LOG_STEP - 1)
