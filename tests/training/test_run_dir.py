"""A run directory that one run owns: the lock, leftovers of killed writes, a finished run that
stays as it is, and an average that a kill cannot shift."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint
from llm_from_scratch.data.datamodule import build_data
from llm_from_scratch.paths import RunDir
from llm_from_scratch.programs.train import translate_command
from llm_from_scratch.training import trainer as trainer_module
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.lock import RunDirError, claim
from llm_from_scratch.training.resume import (
    FinishedRunError,
    ScheduleChangedError,
    discard_snapshots_after,
)
from llm_from_scratch.training.tokenizers import load_or_train_tokenizers
from tests.training.test_trainer import Crash, Run, crashing_after_step, finished_run_of, fp32

from .commands import copy_task_overrides, run_train_script

REPO_ROOT = Path(__file__).resolve().parents[2]
HOLD = """
import sys, time
from pathlib import Path
from llm_from_scratch.paths import RunDir
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.lock import claim
with claim(RunDir(Path(sys.argv[1])), Distributed()):
    print("holding", flush=True)
    time.sleep(600)
"""


def state_of(directory: Path) -> dict[str, tuple]:
    """Every entry below `directory` with its modification time, and each file's digest."""
    entries = {}
    for path in sorted(directory.rglob("*")):
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        entries[str(path.relative_to(directory))] = (stat.st_mtime_ns, stat.st_size, digest)
    return entries


@pytest.fixture
def holder():
    """Starts a process that claims a run directory and keeps it until killed."""
    processes = []

    def start(run_dir: Path) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(run_dir)],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        )
        processes.append(process)
        assert process.stdout.readline() == "holding\n"
        return process

    yield start
    for process in processes:
        process.kill()
        process.wait()


# ---- the lock ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_second_claim_names_the_holder_and_a_kill_9_leaves_no_stale_lock(tmp_path, holder):
    process = holder(tmp_path)
    with pytest.raises(RunDirError) as error, claim(RunDir(tmp_path), Distributed()):
        pass
    message = str(error.value)
    assert message.startswith(f"{tmp_path} is in use by another training run (pid {process.pid} ")
    assert "\n" not in message
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    with claim(RunDir(tmp_path), Distributed()):  # the OS dropped the dead process's lock
        assert f'"pid": {os.getpid()}' in (tmp_path / ".lock").read_text()
    with claim(RunDir(tmp_path), Distributed()):  # and a finished claim leaves none either
        pass


def test_claiming_removes_what_killed_writes_left(tmp_path):
    snapshots = tmp_path / "snapshots"
    snapshots.mkdir()
    leftovers = [tmp_path / ".last.pt.k2j4_x0a", snapshots / ".step-0000010.pt.abcdefgh"]
    leftovers.append(tmp_path / ".budget-probe.pt")
    kept = [tmp_path / "last.pt", snapshots / "step-0000010.pt", tmp_path / "train.log"]
    for path in leftovers + kept:
        path.write_text("x")
    with claim(RunDir(tmp_path), Distributed()):
        assert not any(path.exists() for path in leftovers)
        assert all(path.exists() for path in kept)


def test_snapshots_newer_than_last_pt_are_discarded(tmp_path):
    for step in (5, 10, 15):
        RunDir(tmp_path).snapshot(step).parent.mkdir(exist_ok=True)
        RunDir(tmp_path).snapshot(step).write_text("x")
    assert discard_snapshots_after(RunDir(tmp_path), 10) == [RunDir(tmp_path).snapshot(15)]
    assert RunDir(tmp_path).snapshot_paths() == [RunDir(tmp_path).snapshot(s) for s in (5, 10)]
    discard_snapshots_after(RunDir(tmp_path), 0)  # no last.pt: no snapshot belongs to the run
    assert RunDir(tmp_path).snapshot_paths() == []


def test_an_unfinished_run_continues_only_under_the_schedule_it_trained_with(
    copy_task, tmp_path, monkeypatch
):
    """A run stopped under cosine and continued by a command without `training.schedule` (the
    default, wsd, since) is refused, losing nothing; with the schedule it names, it continues."""
    config, data, _ = copy_task
    cosine = fp32(config, tmp_path, max_steps=6, eval_every=1000, save_every=2, schedule="cosine")
    with crashing_after_step(monkeypatch, 3):
        Run(cosine, data).fit()
    before = state_of(tmp_path)
    default = dataclasses.replace(
        cosine, training=dataclasses.replace(cosine.training, schedule="wsd")
    )
    with pytest.raises(ScheduleChangedError) as error:
        Run(default, data).fit()
    assert str(error.value) == (
        f"{tmp_path} trained to step 2 with training.schedule=cosine, and this command says "
        "training.schedule=wsd training.decay_share=0.2: add training.schedule=cosine to "
        "continue it, or use another name (name=... or paths.run_dir=...) to start a new run"
    )
    assert state_of(tmp_path) == before
    Run(cosine, data).fit()
    assert load_checkpoint(tmp_path / "last.pt")["progress"]["step"] == 6


# ---- averaged.pt after a kill between a snapshot and last.pt -------------------------------------


@pytest.mark.slow
def test_a_kill_between_the_snapshot_and_last_pt_averages_the_same_snapshots(
    copy_task, tmp_path, monkeypatch
):
    config, data, _ = copy_task
    settings = {
        "max_steps": 12, "eval_every": 1000, "save_every": 3, "keep_snapshots": 3,
        "schedule": "cosine",  # snapshots 3 steps apart, as written
    }  # fmt: skip
    Run(fp32(config, tmp_path / "straight", **settings), data).fit()

    killed = fp32(config, tmp_path / "killed", **settings)
    save = trainer_module.save_checkpoint

    def written_then_killed(path: Path, state: dict) -> None:
        save(path, state)
        if state["progress"]["step"] == 9:
            raise Crash  # whichever of the pair comes first is all that step 9 wrote

    monkeypatch.setattr(trainer_module, "save_checkpoint", written_then_killed)
    with pytest.raises(Crash):
        Run(killed, data).fit()
    monkeypatch.undo()
    Run(killed, data).fit()

    runs = [tmp_path / "straight", tmp_path / "killed"]
    names = [[path.name for path in RunDir(run).snapshot_paths()] for run in runs]
    assert names[0] == names[1] == [f"step-{step:07d}.pt" for step in (6, 9, 12)]
    straight, resumed = (load_checkpoint(run / "averaged.pt")["model"] for run in runs)
    for key, value in straight.items():
        assert torch.equal(value, resumed[key]), key


# ---- a finished run ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished(copy_task, tmp_path_factory):
    """A run of 4 steps, finished, and its config."""
    config, data, _ = copy_task
    run_dir = tmp_path_factory.mktemp("finished")
    config = fp32(config, run_dir, max_steps=4, eval_every=2, save_every=2, keep_snapshots=2)
    Run(config, data).fit()
    return config, data, run_dir


def test_a_finished_run_is_told_with_its_model(finished):
    config, _, run_dir = finished
    run = finished_run_of(RunDir(run_dir), config)
    assert (run.step, run.reason, run.model) == (
        4,
        "it trained all its 4 steps",
        run_dir / "averaged.pt",
    )
    report = run.report(translate_command(config, run.model))
    assert "is finished at step 4" in report and "no file changed" in report
    assert f"translate with: {translate_command(config, run.model)}" in report
    longer = dataclasses.replace(config.training, max_steps=8)
    with pytest.raises(FinishedRunError, match=r"training\.max_steps=8 \(it had 4\)"):
        finished_run_of(RunDir(run_dir), dataclasses.replace(config, training=longer))
    bigger = dataclasses.replace(config.model, d_ff=config.model.d_ff * 2)
    with pytest.raises(FinishedRunError, match=r"as another run .*: model\.d_ff: 64 != 128; use"):
        finished_run_of(RunDir(run_dir), dataclasses.replace(config, model=bigger))


def test_fitting_a_finished_run_again_changes_nothing(finished):
    config, data, run_dir = finished
    before = state_of(run_dir)
    assert Run(config, data).fit() == {}
    with_patience = dataclasses.replace(config.training, patience=1)  # it would stop here too
    assert Run(dataclasses.replace(config, training=with_patience), data).fit() == {}
    assert state_of(run_dir) == before


def test_a_finished_run_is_not_continued_under_a_larger_max_steps(finished):
    config, data, run_dir = finished
    longer = dataclasses.replace(config.training, max_steps=8)
    with pytest.raises(FinishedRunError) as error:
        Run(dataclasses.replace(config, training=longer), data).fit()
    assert str(error.value) == (
        f"{run_dir} finished at step 4 (it trained all its 4 steps); training.max_steps=8 (it "
        "had 4) would continue a finished run, whose learning-rate schedule was laid out for the "
        "steps it had: to train another schedule, use another name (name=... or "
        "paths.run_dir=...) to start a new run"
    )


def test_a_snapshot_copied_over_last_pt_is_not_a_training_checkpoint(finished, tmp_path):
    config, _, run_dir = finished
    (tmp_path / "last.pt").write_bytes(RunDir(run_dir).snapshot_paths()[-1].read_bytes())
    with pytest.raises(CheckpointError, match=r"last\.pt is not a training checkpoint \(it lacks"):
        finished_run_of(RunDir(tmp_path), config)


def test_resuming_with_another_vocabulary_is_one_line(finished):
    config, _, run_dir = finished
    tokenizer = dataclasses.replace(config.tokenizer, vocab_size=config.tokenizer.vocab_size + 16)
    other = dataclasses.replace(config, tokenizer=tokenizer)
    src_tok, tgt_tok = load_or_train_tokenizers(other.data, other.tokenizer, other.paths)
    data = build_data(other.data, src_tok, tgt_tok, other.paths)
    before = state_of(run_dir)
    with pytest.raises(CheckpointError) as error:
        Run(other, data).fit()
    message = str(error.value)
    assert message.startswith(f"{run_dir / 'last.pt'} was trained with other settings")
    assert "src tokenizer hash" in message and "\n" not in message
    assert state_of(run_dir) == before


# ---- from the command line -----------------------------------------------------------------------


def train(run_dir: Path, corpus: Path, *overrides: str) -> subprocess.CompletedProcess:
    """`scripts/train.py` on the copy task: 4 steps of the smoke experiment in `run_dir`."""
    return run_train_script(
        [
            *copy_task_overrides(corpus, run_dir.parent, run_dir),
            "training.precision=fp32",
            "training.max_steps=4",
            "training.eval_every=2",
            "training.save_every=2",
            *overrides,
        ]
    )


@pytest.mark.slow
def test_rerunning_a_finished_run_changes_no_file(copy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    first = train(run_dir, copy_corpus)
    assert first.returncode == 0, first.stderr[-3000:]
    assert {".hydra/config.yaml", ".lock", "averaged.pt", "train.log"} <= set(state_of(run_dir))
    before = state_of(run_dir)

    again = train(run_dir, copy_corpus)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{run_dir} is finished at step 4 (it trained all its 4 steps)" in again.stdout
    assert f"scripts/translate.py --checkpoint {run_dir / 'averaged.pt'}" in again.stdout
    longer = train(run_dir, copy_corpus, "training.max_steps=8")
    assert longer.returncode == 2
    assert longer.stderr.startswith("error: ") and longer.stderr.count("\n") == 1
    assert "training.max_steps=8 (it had 4) would continue a finished run" in longer.stderr
    assert state_of(run_dir) == before  # .hydra/ and train.log included


@pytest.mark.slow
def test_a_second_training_in_a_run_directory_is_refused(copy_corpus, tmp_path, holder):
    run_dir = tmp_path / "run"
    process = holder(run_dir)  # stands in for a training run: it holds the lock the same way
    before = state_of(run_dir)
    second = train(run_dir, copy_corpus)
    assert second.returncode == 2
    assert second.stderr.startswith(f"error: {run_dir} is in use by another training run (pid ")
    assert f"pid {process.pid} on " in second.stderr and second.stderr.count("\n") == 1
    assert state_of(run_dir) == before  # not even an empty train.log
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    third = train(run_dir, copy_corpus)  # no stale lock after a kill -9
    assert third.returncode == 0, third.stderr[-3000:]
    assert load_checkpoint(run_dir / "last.pt")["progress"]["step"] == 4
