"""A run directory whose `last.pt` is gone: refused rather than trained over, continued from its
newest snapshot on request; and an average that records its snapshots and refuses a gap."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch

from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint
from llm_from_scratch.paths import RunDir
from llm_from_scratch.programs.average_checkpoints import main as average_main
from llm_from_scratch.training.resume import OrphanedRunError, resume_path
from llm_from_scratch.training.trainer import Trainer
from tests.training.test_run_dir import state_of
from tests.training.test_trainer import (
    Run,
    crashing_after_step,
    finished_run_of,
    fp32,
    run_trainer,
)

# Snapshots every `save_every` steps as written: cosine's (wsd's shrink into its decay is
# tests/training/test_wsd.py's).
SETTINGS = {
    "max_steps": 4,
    "eval_every": 2,
    "save_every": 2,
    "keep_snapshots": 3,
    "schedule": "cosine",
}


@pytest.fixture(scope="module")
def finished_dir(copy_task, tmp_path_factory):
    """A finished run of 4 steps (snapshots 2 and 4, best.pt, averaged.pt, last.pt)."""
    config, data, _ = copy_task
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    Run(fp32(config, run_dir, **SETTINGS), data).fit()
    return run_dir


@pytest.fixture
def copied(copy_task, finished_dir, tmp_path):
    """A copy of the finished run, and its config pointed at the copy."""
    config, data, _ = copy_task
    run_dir = tmp_path / "run"
    shutil.copytree(finished_dir, run_dir)
    return fp32(config, run_dir, **SETTINGS), data, run_dir


def resuming_from_snapshot(config):
    return dataclasses.replace(
        config, training=dataclasses.replace(config.training, resume_from="snapshot")
    )


def test_a_run_without_last_pt_is_refused_and_keeps_every_file(copied):
    config, data, run_dir = copied
    (run_dir / "last.pt").unlink()
    before = state_of(run_dir)
    expected = (
        f"{run_dir} holds snapshots up to step 4, best.pt, averaged.pt but no last.pt: training "
        "there would start from step 0 and overwrite them; use another name (name=... or "
        "paths.run_dir=...) to start a new run, or continue from snapshots/step-0000004.pt with "
        "training.resume_from=snapshot (its weights, schedule and data position; a snapshot has "
        "no optimizer state, so Adam's moments start afresh and the run is close to, not "
        "exactly, the uninterrupted one)"
    )
    with pytest.raises(OrphanedRunError) as error:
        finished_run_of(RunDir(run_dir), config)  # what the train program asks first
    assert str(error.value) == expected
    with pytest.raises(OrphanedRunError):
        Run(config, data).fit()  # the Python API too
    assert state_of(run_dir) == before

    for path in RunDir(run_dir).snapshot_paths():
        path.unlink()
    for name in ("best.pt", "averaged.pt"):
        with pytest.raises(OrphanedRunError, match=r"and no snapshot to continue from"):
            Run(resuming_from_snapshot(config), data).fit()
        (run_dir / name).unlink()
    assert resume_path(RunDir(run_dir), config.training) is None  # nothing left: a new run


def test_a_finished_run_without_last_pt_is_still_finished_from_its_snapshot(copied):
    config, data, run_dir = copied
    (run_dir / "last.pt").unlink()
    before = state_of(run_dir)
    config = resuming_from_snapshot(config)
    run = finished_run_of(RunDir(run_dir), config)
    assert (run.step, run.model) == (4, run_dir / "averaged.pt")
    assert Run(config, data).fit() == {}
    assert state_of(run_dir) == before


@pytest.mark.slow
def test_resume_from_snapshot_restores_all_but_the_optimizer(copy_task, tmp_path, monkeypatch):
    config, data, _ = copy_task
    run_dir = tmp_path / "run"
    config = fp32(config, run_dir, **{**SETTINGS, "max_steps": 8, "eval_every": 3})
    with crashing_after_step(monkeypatch, 5):  # last.pt and the newest snapshot: step 4
        Trainer(config, data).fit()  # a new run
    last = load_checkpoint(run_dir / "last.pt")
    (run_dir / "last.pt").unlink()

    trainer = run_trainer(resuming_from_snapshot(config), data)
    snapshot = load_checkpoint(RunDir(run_dir).snapshot(4))
    for key, value in trainer.model.state_dict().items():
        assert torch.equal(value, snapshot["model"][key]), key
    assert dataclasses.asdict(trainer.progress) == last["progress"]
    assert trainer.scheduler.state_dict() == last["scheduler"]
    saved_rates = [group["lr"] for group in last["optimizer"]["param_groups"]]
    assert [group["lr"] for group in trainer.optimizer.param_groups] == saved_rates
    assert not trainer.optimizer.state  # Adam's moments start afresh
    assert torch.equal(torch.get_rng_state(), last["rng"]["torch"])

    resumed = run_trainer(resuming_from_snapshot(config), data)
    resumed.fit()
    assert resumed.progress.step == 8
    assert [path.name for path in RunDir(run_dir).snapshot_paths()] == [
        f"step-{step:07d}.pt" for step in (4, 6, 8)
    ]
    assert load_checkpoint(run_dir / "last.pt")["progress"]["step"] == 8


def test_averaged_pt_records_its_snapshots_and_their_steps(finished_dir):
    averaged = load_checkpoint(finished_dir / "averaged.pt")
    assert averaged["averaged_steps"] == [2, 4]
    assert averaged["averaged_from"] == [
        str(path) for path in RunDir(finished_dir).snapshot_paths()
    ]


@pytest.mark.parametrize("gone", [2, 4])
def test_averaging_refuses_a_gap_unless_told(copied, gone, capsys):
    config, _, run_dir = copied
    (run_dir / "averaged.pt").unlink()
    RunDir(run_dir).snapshot(gone).unlink()
    before = state_of(run_dir)
    with pytest.raises(CheckpointError) as error:
        average_main(["--run-dir", str(run_dir)])
    assert str(error.value) == (
        f"the snapshot of step {gone} is gone from the 3 newest of {run_dir} (deleted?): "
        "averaging the 1 left is another average; pass --allow-gaps to average them anyway"
    )
    assert state_of(run_dir) == before
    report = finished_run_of(RunDir(run_dir), config).report("translate")
    assert f"averaged.pt is missing, and so is the snapshot of step {gone} (deleted?)" in report
    assert "stopped" not in report

    assert average_main(["--run-dir", str(run_dir), "--allow-gaps"]) == 0
    left = 4 if gone == 2 else 2
    assert load_checkpoint(run_dir / "averaged.pt")["averaged_steps"] == [left]
    assert f"(steps {left})" in capsys.readouterr().out


def test_a_deleted_averaged_pt_alone_is_not_blamed_on_a_stop(copied):
    config, _, run_dir = copied
    (run_dir / "averaged.pt").unlink()
    report = finished_run_of(RunDir(run_dir), config).report("translate")
    assert "averaged.pt is missing (deleted, or the run stopped before writing it)" in report
    assert average_main(["--run-dir", str(run_dir)]) == 0
    assert load_checkpoint(run_dir / "averaged.pt")["averaged_steps"] == [2, 4]
