"""Checkpoint averaging: the arithmetic, the snapshots a run keeps (and writes), and the script."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import (
    CheckpointError,
    CheckpointSummary,
    load_checkpoint,
    restore_for_inference,
)
from llm_from_scratch.paths import RunDir
from llm_from_scratch.training import trainer as trainer_module
from llm_from_scratch.training.averaging import average_checkpoints, average_state_dicts
from tests.training.test_trainer import Run, crashing_after_step

ROOT = Path(__file__).resolve().parents[2]


def test_average_of_state_dicts_is_the_elementwise_mean():
    first = {"w": torch.tensor([1.0, 2.0]), "h": torch.tensor([1.0], dtype=torch.bfloat16)}
    second = {"w": torch.tensor([3.0, 6.0]), "h": torch.tensor([2.0], dtype=torch.bfloat16)}
    third = {"w": torch.tensor([5.0, 1.0]), "h": torch.tensor([3.0], dtype=torch.bfloat16)}
    first["steps"], second["steps"], third["steps"] = (torch.tensor(n) for n in (1, 2, 3))
    averaged = average_state_dicts([first, second, third])
    torch.testing.assert_close(averaged["w"], torch.tensor([3.0, 3.0]))
    assert averaged["h"].dtype == torch.bfloat16 and averaged["h"].item() == 2.0
    assert averaged["steps"].item() == 3  # integers are not averaged: the newest is kept


@pytest.fixture(scope="module")
def trained_run(copy_task, tmp_path_factory):
    """10 steps saving every 2 and keeping 3 snapshots (cosine's spacing, as written)."""
    config, data, _ = copy_task
    run_dir = tmp_path_factory.mktemp("averaged_run")
    training = dataclasses.replace(
        config.training, precision="fp32", device="cpu", max_steps=10, save_every=2,
        eval_every=1000, keep_snapshots=3, schedule="cosine",
    )  # fmt: skip
    paths = dataclasses.replace(config.paths, run_dir=str(run_dir))
    cfg = dataclasses.replace(config, paths=paths, training=training)
    Run(cfg, data).fit()
    return run_dir


def test_run_keeps_its_newest_snapshots_and_writes_their_average(trained_run):
    paths = RunDir(trained_run).snapshot_paths()
    assert [path.name for path in paths] == [f"step-{s:07d}.pt" for s in (6, 8, 10)]
    snapshots = [load_checkpoint(path)["model"] for path in paths]
    averaged = load_checkpoint(trained_run / "averaged.pt")
    for name, value in averaged["model"].items():
        torch.testing.assert_close(value, sum(s[name] for s in snapshots) / 3)
    assert any(not torch.equal(averaged["model"][k], snapshots[-1][k]) for k in snapshots[-1])
    # The newest snapshot is the final model, the one last.pt holds.
    last = load_checkpoint(trained_run / "last.pt")["model"]
    assert all(torch.equal(last[k], snapshots[-1][k]) for k in last)
    model, *_ = restore_for_inference(averaged)
    assert not model.training


@pytest.mark.slow  # three runs, each averaged and scored
def test_a_run_writes_only_the_snapshots_it_averages_and_last_pt_as_often_as_asked(
    copy_task, tmp_path, monkeypatch
):
    """A run of minutes: no snapshot that its average would never read, and with
    `training.last_every`, `last.pt` (the optimizer's moments too) at its first save and its
    end; a crash resumes from that `last.pt` and trains the run that no crash trains."""
    config, data, _ = copy_task
    settings = {
        "precision": "fp32", "device": "cpu", "max_steps": 10, "warmup_steps": 3,
        "save_every": 2, "eval_every": 1000, "keep_snapshots": 3, "schedule": "cosine",
    }  # fmt: skip

    def run_config(name: str, **changes) -> object:
        training = dataclasses.replace(config.training, **settings, **changes)
        paths = dataclasses.replace(config.paths, run_dir=str(tmp_path / name))
        return dataclasses.replace(config, paths=paths, training=training)

    written = []
    save = trainer_module.save_checkpoint

    def recorded(path, state) -> None:
        written.append((Path(path).parent.name, Path(path).name, state["progress"]["step"]))
        save(path, state)

    monkeypatch.setattr(trainer_module, "save_checkpoint", recorded)
    straight = Run(run_config("straight"), data)
    straight.fit()
    # Step 2: within the warm-up, at whose end a time budget may plan again; 4: deleted unread.
    assert [step for _, name, step in written if name.startswith("step-")] == [2, 6, 8, 10]
    assert [step for _, name, step in written if name == "last.pt"] == [2, 4, 6, 8, 10]
    written.clear()
    paced = run_config("paced", last_every="1h")
    with crashing_after_step(monkeypatch, 7):
        Run(paced, data).fit()
    assert [step for _, name, step in written if name == "last.pt"] == [2]
    resumed = Run(paced, data)
    resumed.fit()
    # Each start writes its first save's, then only the last step's.
    assert [step for _, name, step in written if name == "last.pt"] == [2, 4, 10]
    for run in (straight, resumed):
        averaged = load_checkpoint(run.trainer.run_dir.averaged)
        assert averaged["averaged_steps"] == [6, 8, 10]
    reference = load_checkpoint(straight.trainer.run_dir.averaged)["model"]
    assert all(torch.equal(averaged["model"][key], reference[key]) for key in reference)
    last = load_checkpoint(resumed.trainer.run_dir.last)
    assert last["progress"]["step"] == 10 and "optimizer" in last


def test_average_records_its_step_and_dev_scores(trained_run):
    # What translate and evaluate report about the model they load.
    summary = CheckpointSummary.of(load_checkpoint(trained_run / "averaged.pt"), "averaged.pt")
    assert (summary.step, summary.averaged_from) == (10, 3)
    assert summary.dev_bleu is not None and 0.0 <= summary.dev_bleu <= 100.0


def test_averaging_refuses_checkpoints_of_other_models(trained_run, tmp_path):
    other = load_checkpoint(RunDir(trained_run).snapshot_paths()[0])
    other["config"]["model"]["d_ff"] += 1
    torch.save(other, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="other model settings"):
        average_checkpoints(
            [tmp_path / "other.pt", RunDir(trained_run).snapshot_paths()[1]], tmp_path / "a.pt"
        )


@pytest.mark.slow
def test_script_averages_a_run_and_reports_bad_input(trained_run, tmp_path):
    script = str(ROOT / "scripts/average_checkpoints.py")
    output = tmp_path / "avg.pt"
    done = subprocess.run(
        [sys.executable, script, "--run-dir", str(trained_run), "--last", "2", "-o", str(output)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "averaged 2 checkpoints" in done.stdout
    expected = average_state_dicts(
        [load_checkpoint(p)["model"] for p in RunDir(trained_run).snapshot_paths()[-2:]]
    )
    saved = load_checkpoint(output)["model"]
    assert all(torch.equal(saved[k], expected[k]) for k in expected)
    missing = subprocess.run(
        [sys.executable, script, str(tmp_path / "nope.pt"), "-o", str(output)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: checkpoint") and "Traceback" not in missing.stderr
