"""SIGTERM and SIGINT stop `scripts/train.py` cleanly: the step in progress finishes, `last.pt`
is saved, one line says so, the exit status is the signal's; the same command then continues
exactly. A second signal exits at once."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from llm_from_scratch.checkpoint import load_checkpoint

from .commands import copy_task_overrides
from .test_run_dir import state_of

REPO_ROOT = Path(__file__).resolve().parents[2]
STEPS = ("training.max_steps=10", "training.eval_every=4", "training.save_every=4")
# scripts/train.py, with the update of step PAUSE + 1 held for a while after it writes its pid to
# the file $STEP_MARKER: a signal sent then arrives in the middle of that step. Under torchrun,
# only rank $PAUSE_RANK does.
PAUSE = 5
DRIVER = f"""
import os, sys, time
from pathlib import Path
from llm_from_scratch.training.trainer import Trainer

update = Trainer.update

def update_then_wait(trainer, micro_batches):
    stats = update(trainer, micro_batches)
    paused = os.environ.get("RANK", "0") == os.environ.get("PAUSE_RANK", "0")
    if trainer.progress.step == {PAUSE} and paused:
        Path(os.environ["STEP_MARKER"]).write_text(str(os.getpid()))
        time.sleep(3)
    return stats

Trainer.update = update_then_wait
from llm_from_scratch.programs.train import main
main()
"""


TORCHRUN = ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")


def train_command(script: list[str], corpus: Path, run_dir: Path) -> list[str]:
    overrides = copy_task_overrides(corpus, run_dir.parent, run_dir)
    return [sys.executable, *script, *overrides, "training.precision=fp32", *STEPS]


def environment(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OMP_NUM_THREADS": "1", **extra}


def train(corpus: Path, run_dir: Path) -> subprocess.CompletedProcess:
    command = train_command(["scripts/train.py"], corpus, run_dir)
    return subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, env=environment()
    )


def interrupted(
    corpus: Path, run_dir: Path, signals: list[int], launcher: tuple[str, ...] = (), rank: int = 0
) -> subprocess.CompletedProcess:
    """The training run of `train`, its process sent `signals` (1.5 s apart) in the middle of
    step PAUSE + 1; under a `launcher`, rank `rank`'s process."""
    marker = run_dir.parent / "paused"
    driver = run_dir.parent / "driver.py"
    driver.write_text(DRIVER)
    process = subprocess.Popen(
        train_command([*launcher, str(driver)], corpus, run_dir),
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment(STEP_MARKER=str(marker), PAUSE_RANK=str(rank)),
        # A shell starting these tests in the background (`... &`) has SIGINT ignored, which the
        # run would inherit and rightly keep: the run must get the default, as at a terminal.
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 300
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)  # the pid written
    for index, signum in enumerate(signals):
        time.sleep(1.5 if index else 0)
        os.kill(int(marker.read_text()), signum)
    stdout, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def weights(run_dir: Path, name: str = "last.pt") -> dict[str, torch.Tensor]:
    return load_checkpoint(run_dir / name)["model"]


@pytest.fixture(scope="module")
def uninterrupted(copy_corpus, tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("uninterrupted") / "run"
    finished = train(copy_corpus, run_dir)
    assert finished.returncode == 0, finished.stderr[-3000:]
    return run_dir


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_saves_last_pt_and_the_same_command_continues_exactly(
    copy_corpus, tmp_path, uninterrupted, signum, status
):
    run_dir = tmp_path / "run"
    stopped = interrupted(copy_corpus, run_dir, [signum])
    assert stopped.returncode == status, stopped.stderr[-3000:]
    step = PAUSE + 1  # the step the signal came in: finished, not lost
    lines = stopped.stderr.splitlines()
    assert lines[-1] == (
        f"stopped at step {step}: saved {run_dir / 'last.pt'}; run the same command to resume"
    )
    assert sum("stopped at step" in line for line in lines) == 1
    assert "Traceback" not in stopped.stderr
    assert load_checkpoint(run_dir / "last.pt")["progress"]["step"] == step

    resumed = train(copy_corpus, run_dir)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed {run_dir / 'last.pt'} at step {step}" in resumed.stdout + resumed.stderr
    for name in ("last.pt", "best.pt", "averaged.pt"):
        expected, actual = weights(uninterrupted, name), weights(run_dir, name)
        for key, value in expected.items():
            assert torch.equal(value, actual[key]), (name, key)


@pytest.mark.slow
def test_a_second_signal_exits_at_once_without_saving(copy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    stopped = interrupted(copy_corpus, run_dir, [signal.SIGINT, signal.SIGINT])
    assert stopped.returncode == 130
    assert stopped.stderr.splitlines()[-1] == (
        "SIGINT again: stopped at once, without saving; run the same command to resume from the "
        "last save"
    )
    assert "Traceback" not in stopped.stderr
    # The save of step 4 stays; the step the signals came in saved nothing.
    assert load_checkpoint(run_dir / "last.pt")["progress"]["step"] == 4
    assert not re.search(r"stopped at step", stopped.stderr)


@pytest.mark.slow
def test_under_torchrun_the_ranks_stop_at_the_same_step(copy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    stopped = interrupted(copy_corpus, run_dir, [signal.SIGTERM], launcher=TORCHRUN, rank=1)
    # Rank 1 got the signal; the ranks agree on it at the next step that logs, validates or
    # saves (no other step waits for a collective), where rank 0 stops with it, and saves.
    step = 8
    assert step > PAUSE + 1 and "training.eval_every=4" in STEPS
    line = f"stopped at step {step}: saved {run_dir / 'last.pt'}; run the same command to resume"
    assert stopped.stderr.count(line) == 1, stopped.stderr[-3000:]
    assert load_checkpoint(run_dir / "last.pt")["progress"]["step"] == step
    assert "exitcode  : 143" in stopped.stderr  # torchrun's report of its workers


@pytest.mark.slow
def test_the_train_command_refuses_a_run_without_last_pt_in_one_line(
    copy_corpus, tmp_path, uninterrupted
):
    run_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, run_dir)
    (run_dir / "last.pt").unlink()  # the largest file: deleted to save space
    before = state_of(run_dir)
    refused = train(copy_corpus, run_dir)
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        f"error: {run_dir} holds snapshots up to step 10, best.pt, averaged.pt but no last.pt: "
        "training there would start from step 0 and overwrite them; use another name"
    )
    assert refused.stderr.count("\n") == 1
    assert state_of(run_dir) == before


def interrupted_after_the_pipe_closed(corpus: Path, run_dir: Path) -> int:
    """`make train ... 2>&1 | tee log`, Ctrl-C: the training run of `train`, its stdout and
    stderr one pipe whose reader goes away (tee, stopped by the same Ctrl-C) in the middle of
    step PAUSE + 1, before the run gets SIGINT. Returns its exit status."""
    marker = run_dir.parent / "paused"
    driver = run_dir.parent / "driver.py"
    driver.write_text(DRIVER)
    reader, writer = os.pipe()
    process = subprocess.Popen(
        train_command([str(driver)], corpus, run_dir),
        cwd=REPO_ROOT,
        stdout=writer,
        stderr=writer,
        env=environment(STEP_MARKER=str(marker)),
        preexec_fn=default_sigint,
    )
    os.close(writer)
    deadline = time.monotonic() + 300
    while not marker.exists() and process.poll() is None and time.monotonic() < deadline:
        # tee: read what the run writes, so that it never waits on a full pipe
        if select.select([reader], [], [], 0.05)[0]:
            os.read(reader, 1 << 16)
    time.sleep(0.1)  # the pid written
    os.close(reader)  # tee ends
    os.kill(int(marker.read_text()), signal.SIGINT)
    return process.wait(timeout=300)


@pytest.mark.slow  # a training process stopped mid-run
def test_a_closed_pipe_costs_no_step(copy_corpus, tmp_path):
    run_dir = tmp_path / "run"
    status = interrupted_after_the_pipe_closed(copy_corpus, run_dir)
    assert status == 130
    # the step the signal came in is saved, though nothing the run wrote could be read
    assert load_checkpoint(run_dir / "last.pt")["progress"]["step"] == PAUSE + 1
