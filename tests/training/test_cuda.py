"""Training on a CUDA GPU: the CPU's gradients, bf16 and fp16 (with loss scaling) that learn,
torch.compile's gradients, and a whole run with validation. Skipped without a GPU."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest
import torch

from llm_from_scratch.training.stats import StepBatches
from llm_from_scratch.training.trainer import Trainer

from .test_trainer import with_trainer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def first_batches(data, count: int) -> list:
    return list(data.eval_loader("dev"))[:count]


def trainer_on(config, data, run_dir, **changes) -> Trainer:
    """Uncompiled unless `compile` says otherwise: compiling takes most of a minute per model."""
    model = dataclasses.replace(config.model, dropout=0.0)
    changes = {"compile": "false", **changes}
    return Trainer(with_trainer(dataclasses.replace(config, model=model), run_dir, **changes), data)


@pytest.mark.parametrize("compile_model", ["false", "true"])
def test_an_update_on_cuda_has_the_cpus_loss_and_gradient(copy_task, tmp_path, compile_model):
    config, data, _ = copy_task
    batch = first_batches(data, 1)
    on_cpu = trainer_on(config, data, tmp_path / "cpu", device="cpu", precision="fp32")
    on_cuda = trainer_on(
        config, data, tmp_path / "cuda", device="cuda", precision="fp32", compile=compile_model
    )
    assert on_cuda.config.training.compiles(on_cuda.device) == (compile_model == "true")
    step = StepBatches.alone(batch)
    expected, got = on_cpu.update(step), on_cuda.update(step)
    assert got.loss == pytest.approx(expected.loss, rel=1e-4)
    assert got.grad_norm.item() == pytest.approx(expected.grad_norm.item(), rel=1e-3)


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_on_cuda_learns(copy_task, tmp_path, precision):
    config, data, _ = copy_task
    batches = first_batches(data, 2)
    trainer = trainer_on(config, data, tmp_path, device="cuda", precision=precision, lr=3e-3)
    assert trainer.scaler.is_enabled() == (precision == "fp16")
    losses, skipped = [], 0
    for _ in range(40):
        stats = trainer.update(StepBatches.alone(batches))
        losses.append(stats.loss)
        skipped += int(stats.skipped)
    # fp16's scaler starts high and backs off through a few skipped steps; then it must settle.
    assert skipped <= 8
    assert losses[-1] < 0.7 * losses[0], losses


def test_a_run_on_cuda_validates_and_saves(copy_task, tmp_path):
    config, data, _ = copy_task
    trainer = trainer_on(
        config,
        data,
        tmp_path,
        device="cuda",
        precision="auto",
        max_steps=6,
        eval_every=6,
        save_every=6,
    )
    metrics = trainer.fit()
    assert trainer.precision.name in ("bf16", "fp16")
    assert "bleu" in metrics
    assert (tmp_path / "last.pt").is_file() and (tmp_path / "best.pt").is_file()


def test_a_profiled_run_on_cuda_counts_the_gpus_busy_time(copy_task, tmp_path, caplog):
    config, data, _ = copy_task
    trainer = trainer_on(
        config, data, tmp_path, device="cuda", max_steps=10, eval_every=100, profile_steps=3
    )
    with caplog.at_level(logging.INFO, logger="llm_from_scratch.training.profiling"):
        trainer.fit()
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("profiled")]
    busy = float(re.search(r"GPU busy ([\d.]+) ms", line).group(1))
    wall = float(re.search(r"([\d.]+) ms a step", line).group(1))
    assert 0 < busy < wall
    assert "by GPU time" in (tmp_path / "profile" / "summary.txt").read_text()
