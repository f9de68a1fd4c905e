"""Under torchrun (two CPU processes, gloo), an optimizer step between log steps communicates once:
DDP's gradient all-reduce (its buckets counted as one). Each collective makes every rank wait for
the slowest; the token count, the stop decision and the buffers need none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .commands import copy_task_overrides

REPO_ROOT = Path(__file__).resolve().parents[2]
STEPS, LOG_EVERY = 12, 10  # the smoke experiment logs every 10 steps, and step 1
# scripts/train.py, counting each rank's collectives from the start of one update to the next:
# the Python ones by name, and the gradient buckets DDP's comm hook is handed.
DRIVER = """
import atexit, json, os
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
import llm_from_scratch.training.trainer as trainer_module
from llm_from_scratch.training.trainer import Trainer

COLLECTIVES = (
    "all_reduce", "all_gather", "all_gather_object", "broadcast", "broadcast_object_list",
    "barrier", "reduce", "gather", "scatter", "reduce_scatter", "all_to_all",
    "_broadcast_coalesced",
)
steps = []
in_hook = [False]  # the hook's own all-reduce is the gradients'

def counted(name, function):
    def collective(*args, **kwargs):
        if steps and not in_hook[0]:
            steps[-1]["python"].append(name)
        return function(*args, **kwargs)
    return collective

for name in COLLECTIVES:
    setattr(dist, name, counted(name, getattr(dist, name)))

def counting_hook(state, bucket):
    steps[-1]["buckets"] += 1
    in_hook[0] = True
    try:
        return default_hooks.allreduce_hook(None, bucket)
    finally:
        in_hook[0] = False

build_learner, update = trainer_module.build_learner, Trainer.update

def build_and_hook(*args, **kwargs):
    learner = build_learner(*args, **kwargs)
    learner.forward_model.register_comm_hook(None, counting_hook)
    return learner

def counted_update(trainer, micro_batches):
    steps.append({"step": trainer.progress.step + 1, "python": [], "buckets": 0})
    return update(trainer, micro_batches)

trainer_module.build_learner, Trainer.update = build_and_hook, counted_update

def dump():
    path = os.path.join(os.environ["COUNTS_DIR"], f"rank{os.environ['RANK']}.json")
    with open(path, "w") as file:
        json.dump(steps, file)

atexit.register(dump)
from llm_from_scratch.programs.train import main
main()
"""


@pytest.mark.slow
def test_a_ddp_step_between_log_steps_only_all_reduces_the_gradients(copy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    overrides = [
        *copy_task_overrides(copy_corpus, tmp_path, run_dir),
        "training.precision=fp32",
        f"training.max_steps={STEPS}",
        "training.eval_every=1000",
        "training.save_every=1000",
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "OMP_NUM_THREADS": "1",
        "COUNTS_DIR": str(tmp_path),
    }
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER, encoding="utf-8")
    result = subprocess.run(
        [*torchrun, str(driver), *overrides],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for rank in (0, 1):
        steps = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert [step["step"] for step in steps] == list(range(1, STEPS + 1))
        assert all(step["buckets"] >= 1 for step in steps)  # the gradients' all-reduce
        between = [step["python"] for step in steps if step["step"] not in (1, LOG_EVERY, STEPS)]
        assert between == [[]] * (STEPS - 3)
        # A log step agrees on whether a signal asks the ranks to stop.
        assert steps[LOG_EVERY - 1]["python"] == ["all_reduce"]
