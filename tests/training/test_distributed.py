"""torchrun with two CPU processes (gloo): both train, only rank 0 writes the run directory; and
DDP's constructor under the older signature of the GPU machines' torch."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from llm_from_scratch.checkpoint import load_checkpoint
from llm_from_scratch.precision import Precision
from llm_from_scratch.training import loss as loss_module
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.loss import ModelLoss, forward_module

from .commands import copy_task_overrides

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_two_process_gloo_ddp_trains(copy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    overrides = [
        *copy_task_overrides(copy_corpus, tmp_path, run_dir),
        "training.precision=auto",  # each rank times bf16 against fp32; the ranks must agree
        "training.max_steps=6",
        "training.eval_every=6",
        "training.save_every=6",
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [*torchrun, "scripts/train.py", *overrides],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )

    result = run()  # rank 0 holds the run directory's lock for the job; rank 1 does not ask
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("step 6/6 | dev") == 1  # the log comes from rank 0 only
    state = load_checkpoint(run_dir / "last.pt")
    assert state["progress"]["step"] == 6
    assert len(list((run_dir / "tensorboard").glob("events.out.tfevents.*"))) == 1
    again = run()  # every rank sees the run finished; none waits for another
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.count("is finished at step 6") == 1


@pytest.mark.slow
def test_two_processes_plan_a_budget_and_plan_it_again_together(copy_corpus, tmp_path):
    """Each rank times its own steps; rank 0's plans hold for both, or the job would hang."""
    run_dir = tmp_path / "run"
    overrides = [
        *copy_task_overrides(copy_corpus, tmp_path, run_dir),
        "training.precision=fp32",
        "training.max_time=40",
        "training.max_steps=100000",
        "training.warmup_steps=50000",  # long enough to time the run's own steps
        "training.eval_every=100000",
        "training.save_every=100000",
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    result = subprocess.run(
        [*torchrun, "scripts/train.py", *overrides],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("planned again at step") == 1
    progress = load_checkpoint(run_dir / "last.pt")["progress"]
    assert progress["step"] == progress["planned_steps"] > 1


class OlderDDP(nn.Module):
    """DistributedDataParallel's constructor as torch 2.11 (the GPU machines') has it: no
    `forward_sync_buffers`."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True):
        super().__init__()
        self.module, self.broadcast_buffers = module, broadcast_buffers


class NewerDDP(OlderDDP):
    def __init__(self, module, device_ids=None, broadcast_buffers=None, forward_sync_buffers=None):
        super().__init__(module, device_ids, broadcast_buffers=broadcast_buffers)
        self.forward_sync_buffers = forward_sync_buffers


@pytest.mark.parametrize(
    ("ddp", "setting"),
    [(OlderDDP, ("broadcast_buffers", False)), (NewerDDP, ("forward_sync_buffers", False))],
)
def test_ddp_broadcasts_no_buffers_before_a_forward_under_either_signature(
    monkeypatch, ddp, setting
):
    monkeypatch.setattr(loss_module, "DistributedDataParallel", ddp)
    model_loss = ModelLoss(nn.Linear(2, 2), Precision(torch.device("cpu"), "fp32"), 0, 0.0)
    wrapped = forward_module(model_loss, Distributed(rank=0, world_size=2), False, lambda: 1)
    assert isinstance(wrapped, ddp) and wrapped.module is model_loss
    name, value = setting
    assert getattr(wrapped, name) is value
    if ddp is NewerDDP:
        assert wrapped.broadcast_buffers is None  # left to DDP's default: buffers sync at init


def test_this_torchs_ddp_takes_the_setting_it_is_given():
    parameters = inspect.signature(DistributedDataParallel).parameters
    assert loss_module.unsynced_buffers().keys() <= parameters.keys()
