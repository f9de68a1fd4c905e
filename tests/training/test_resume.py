"""A run start reads the file it continues from once: the finished-run check, the planner and
the trainer share that read."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import load_checkpoint
from llm_from_scratch.programs.train import train
from llm_from_scratch.training.config import ShortRunConfig
from llm_from_scratch.training.trainer import Trainer
from tests.training.test_budget import StepClock, budgeted
from tests.training.test_trainer import Crash, crashing_after_step, fp32


def test_a_resumed_start_reads_last_pt_once(copy_task, tmp_path, monkeypatch):
    config = fp32(copy_task[0], tmp_path, max_steps=4, eval_every=1000, save_every=2, threads=1)
    with crashing_after_step(monkeypatch, 2):  # last.pt was written at step 2
        train(config)  # the program's start: finished-run check, lock, plan, trainer

    reads, load = [], torch.load

    def counted(file, *args, **kwargs):
        if Path(file) == tmp_path / "last.pt":
            reads.append(file)
        return load(file, *args, **kwargs)

    resumed_at = []

    def stopped_at_the_first_update(trainer: Trainer, micro_batches):
        resumed_at.append(trainer.progress.step)
        raise Crash

    monkeypatch.setattr(torch, "load", counted)
    monkeypatch.setattr(Trainer, "update", stopped_at_the_first_update)
    with pytest.raises(Crash):
        train(config)
    assert resumed_at == [2]  # it continued from last.pt
    assert len(reads) == 1


def test_a_run_prepares_its_data_once_per_start(copy_task, tmp_path, monkeypatch, caplog):
    """The data stage (tokenizers, tokenized splits) runs once when a run starts, and once when it
    resumes: its log line says so each time it runs."""
    config = fp32(copy_task[0], tmp_path, max_steps=4, eval_every=1000, save_every=2, threads=1)
    with caplog.at_level("INFO"):
        with crashing_after_step(monkeypatch, 2):
            train(config)
        assert caplog.text.count("tokenized splits ready") == 1
        train(config)  # resumed from last.pt, to the end
    assert caplog.text.count("tokenized splits ready") == 2
    assert caplog.text.count("resumed ") == 1


@pytest.mark.slow
def test_a_budget_that_switches_to_the_short_recipes_tokenizers_prepares_its_data_once(
    copy_task, tmp_path, monkeypatch, caplog
):
    """The recipe, tokenizers included, is decided before the data stage, which then runs once."""
    short = ShortRunConfig(max_steps=60, lr=3e-3, warmup=0.2, save_every=0.25, vocab_size=300)
    config = budgeted(copy_task[0], tmp_path, max_time="60", short_run=short, threads=1)
    with caplog.at_level("INFO"):
        train(config, clock=StepClock(monkeypatch))
    assert load_checkpoint(tmp_path / "last.pt")["config"]["tokenizer"]["vocab_size"] == 300
    assert caplog.text.count("tokenized splits ready") == 1
