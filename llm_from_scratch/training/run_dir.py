"""A run directory that one run owns: its lock, what killed writes left, a finished run.

The train program looks at the run directory, and claims it, before anything is written there
(Hydra records the config only afterwards, see `configs/train.yaml`), so that a refused second
run and the rerun of a finished one change no file:

- `finished_run`: a run that stopped (all its steps, its epochs, or early stopping) is finished,
  and its rerun does nothing. A finished run is not continued under other stopping settings
  (say a larger `training.max_steps`): its learning-rate schedule was laid out for the steps it
  had, so the longer run would be one that no uninterrupted run trains.
- `claim`: an OS lock (flock) on `<run_dir>/.lock`, held for the whole run. The OS releases it
  when the process ends, however it ends, so a `kill -9` leaves no stale lock; the file stays,
  naming its last holder. Under torchrun, rank 0 holds it for the job.
- Once the lock is held, the temporary files of writes that a kill interrupted are deleted.
- `resume_path`: the file a run continues from. A run directory that holds a run's files
  (snapshots, `best.pt`, `averaged.pt`) but no `last.pt` (deleted to save space: it is the
  largest) is refused rather than trained over from step 0, unless `training.resume_from=snapshot`
  continues it from its newest snapshot.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.atomic import temporary_files
from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint
from llm_from_scratch.errors import UserError
from llm_from_scratch.schema import to_data
from llm_from_scratch.training.averaging import (
    SNAPSHOT_DIR,
    missing_snapshot,
    snapshot_paths,
    snapshot_step,
)
from llm_from_scratch.training.config import TrainConfig, TrainingConfig
from llm_from_scratch.training.distributed import Distributed
from llm_from_scratch.training.recipe import recipe_plan
from llm_from_scratch.training.state import SavedRun

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"
LAST = "last.pt"
# What `last.pt` holds beyond an inference checkpoint, to continue a run exactly.
TRAINING_STATE = ("optimizer", "scheduler", "scaler", "progress", "rng")
NEW_RUN = "use another name (name=... or paths.run_dir=...) to start a new run"


class RunDirError(UserError):
    """The run directory is in use by another run, or cannot be locked."""


class FinishedRunError(UserError):
    """A finished run was asked to train on under other stopping settings."""


class OrphanedRunError(UserError):
    """A run directory holds a run's files but no `last.pt` to continue it from."""


# ---- the lock ---------------------------------------------------------------------------------


@contextmanager
def claim(run_dir: Path, dist: Distributed) -> Iterator[None]:
    """Own `run_dir` for the block: lock it (rank 0, for the whole job), then delete what killed
    writes left there. Every rank raises `RunDirError` when another run holds it."""
    with ExitStack() as stack:
        refusal = None
        if dist.is_main:
            try:
                stack.enter_context(_locked(run_dir))
            except RunDirError as error:
                refusal = error
        if dist.any(refusal is not None):
            raise refusal or RunDirError(f"{run_dir} is in use by another run (rank 0 says who)")
        if dist.is_main:
            remove_leftovers(run_dir)
        yield


@contextmanager
def _locked(run_dir: Path) -> Iterator[None]:
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirError(
                f"{run_dir} is in use by another training run ({_holder(descriptor)}): wait for "
                f"it to end or stop it, or {NEW_RUN}"
            ) from None
        except OSError as error:
            raise RunDirError(f"cannot lock {path}: {error.strerror}") from None
        os.ftruncate(descriptor, 0)
        holder = {"pid": os.getpid(), "host": socket.gethostname(), "started": _now()}
        os.pwrite(descriptor, json.dumps(holder).encode(), 0)
        yield
    finally:
        os.close(descriptor)  # which releases the lock


def _holder(descriptor: int) -> str:
    try:
        holder = json.loads(os.pread(descriptor, 4096, 0))
        return f"pid {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (ValueError, KeyError, TypeError):  # it has the lock but has yet to write its name
        return "a process that is starting"


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


# ---- leftovers --------------------------------------------------------------------------------


def remove_leftovers(run_dir: Path) -> list[Path]:
    """Delete the temporary files of killed writes in `run_dir` and its snapshots, and hidden
    `.pt` files (scratch, such as the time-budget probe's save). Only the lock's holder may:
    another run's temporary files would be files it is writing."""
    leftovers: set[Path] = set()
    for directory in (run_dir, run_dir / SNAPSHOT_DIR):
        leftovers.update(temporary_files(directory))
        leftovers.update(path for path in directory.glob(".*.pt") if path.is_file())
    for path in sorted(leftovers):
        path.unlink(missing_ok=True)
        logger.info("removed %s, left by a write that was killed", path)
    return sorted(leftovers)


def discard_snapshots_after(run_dir: Path, step: int) -> list[Path]:
    """Delete the snapshots of steps after `step`, the step `last.pt` holds (0: none).

    A snapshot is written before its step's `last.pt`, so a run killed between the two leaves a
    snapshot that the resumed run trains to again and rewrites; removing it first keeps even a
    resumed run whose schedule was planned anew (no `last.pt` yet) from averaging a stray one."""
    stray = [path for path in snapshot_paths(run_dir) if snapshot_step(path) > step]
    for path in stray:
        path.unlink()
        logger.info("removed %s: it is newer than %s (step %d)", path, run_dir / LAST, step)
    return stray


# ---- last.pt and a finished run ---------------------------------------------------------------


def load_last(path: Path, map_location: str | torch.device = "cpu", mmap: bool = False) -> dict:
    """A run's `last.pt`, checked to be a training checkpoint."""
    state = load_checkpoint(path, map_location=map_location, mmap=mmap)
    missing = [key for key in TRAINING_STATE if key not in state]
    if missing:
        raise CheckpointError(
            f"{path} is not a training checkpoint (it lacks {', '.join(missing)}): a "
            "weights-only file (a snapshot, averaged.pt) cannot resume training; move it "
            f"away, or {NEW_RUN}"
        )
    return state


# What a snapshot holds beyond an inference checkpoint: all of last.pt but the optimizer.
SNAPSHOT_STATE = ("scheduler", "scaler", "progress", "rng")
RESUME_FROM_SNAPSHOT = "training.resume_from=snapshot"


def resume_path(run_dir: Path, cfg: TrainingConfig) -> Path | None:
    """The file a run in `run_dir` continues from: `last.pt`; where it is gone and `cfg` says
    `resume_from=snapshot`, the newest snapshot; None: nothing there, a new run.

    Raises `OrphanedRunError` for a directory with a run's files but neither: training there
    would start from step 0 and write over them."""
    last = run_dir / LAST
    if last.is_file():
        return last
    snapshots = snapshot_paths(run_dir)
    models = [name for name in ("best.pt", "averaged.pt") if (run_dir / name).is_file()]
    if snapshots and cfg.resume_from == "snapshot":
        return snapshots[-1]
    if not snapshots and not models:
        return None
    held = [f"snapshots up to step {snapshot_step(snapshots[-1])}"] if snapshots else []
    there = f"{run_dir} holds {', '.join(held + models)} but no {LAST}"
    if not snapshots:
        raise OrphanedRunError(
            f"{there}, and no snapshot to continue from: training there would start from step "
            f"0 and overwrite them; {NEW_RUN}"
        )
    raise OrphanedRunError(
        f"{there}: training there would start from step 0 and overwrite them; {NEW_RUN}, or "
        f"continue from {SNAPSHOT_DIR}/{snapshots[-1].name} with {RESUME_FROM_SNAPSHOT} (its "
        "weights, schedule and data position; a snapshot has no optimizer state, so Adam's "
        "moments start afresh and the run is close to, not exactly, the uninterrupted one)"
    )


def load_resume(path: Path, map_location: str | torch.device = "cpu", mmap: bool = False) -> dict:
    """The file `resume_path` chose, checked to hold what continuing the run needs."""
    if path.name == LAST:
        return load_last(path, map_location=map_location, mmap=mmap)
    state = load_checkpoint(path, map_location=map_location, mmap=mmap)
    missing = [key for key in SNAPSHOT_STATE if key not in state]
    if missing:
        raise CheckpointError(
            f"{path} cannot continue the run (it lacks {', '.join(missing)}: it predates "
            f"snapshots that can); {NEW_RUN}"
        )
    return state


def check_stopping_settings(saved: SavedRun, cfg: TrainingConfig, path: Path) -> None:
    """Refuse to continue a finished run: stopping settings under which it would train on (a
    larger `max_steps`, a longer patience) are an error; others (a patience added to a run that
    trained all its steps) leave it finished."""
    if not saved.finished:
        return
    changed = saved.changed_stopping_settings(cfg)
    if changed and not saved.stops_under(cfg):
        raise FinishedRunError(
            f"{path.parent} finished at step {saved.progress.step} ({saved.reason}); "
            f"{', '.join(changed)} would continue a finished run, whose learning-rate schedule "
            f"was laid out for the steps it had: to train another schedule, {NEW_RUN}"
        )


@dataclass(frozen=True)
class FinishedRun:
    run_dir: Path
    step: int
    reason: str
    model: Path  # what translate.py and evaluate.py use by default
    averaging_missing: bool  # snapshots to average, but no averaged.pt
    missing_snapshot: int | None  # the step of a snapshot gone from those it would average

    def report(self, translate_command: str) -> str:
        """What a rerun says; `translate_command` translates with the run's model."""
        lines = [
            f"{_shown(self.run_dir)} is finished at step {self.step} ({self.reason}): nothing "
            "to train, no file changed",
            f"its model: {_shown(self.model)}",
            f"translate with: {translate_command}",
        ]
        command = (
            f".venv/bin/python scripts/average_checkpoints.py --run-dir {_shown(self.run_dir)}"
        )
        if self.averaging_missing and self.missing_snapshot is not None:
            lines.append(
                f"averaged.pt is missing, and so is the snapshot of step {self.missing_snapshot} "
                f"(deleted?): average the snapshots left with: {command} --allow-gaps"
            )
        elif self.averaging_missing:
            lines.append(
                "averaged.pt is missing (deleted, or the run stopped before writing it); write "
                f"it with: {command}"
            )
        return "\n".join(lines)


def finished_run(
    run_dir: Path, config: TrainConfig, keep_model: bool = False
) -> FinishedRun | None:
    """The run in `run_dir` when it has finished (None: it has steps left, or none yet).
    `keep_model`: the command chose its model (see `planner.recipe_plan`).

    Raises `FinishedRunError` when `config` describes another run (another model, tokenizer or
    corpus) or would continue this one."""
    path = resume_path(run_dir, config.training)
    if path is None:
        return None
    state = load_resume(path, mmap=True)  # the tensors are not needed, only the progress
    saved = SavedRun.of(state)
    if not saved.finished:
        return None
    trained = recipe_plan(config, saved.progress.schedule(config.training), keep_model).model
    current = {**to_data(config), "model": to_data(trained)}
    differences = _run_differences(state["config"], current)
    if differences:
        raise FinishedRunError(
            f"{run_dir} finished at step {saved.progress.step} as another run (its "
            f"settings != this command's): {'; '.join(differences)}; {NEW_RUN}"
        )
    check_stopping_settings(saved, config.training, path)
    averaged, best = run_dir / "averaged.pt", run_dir / "best.pt"
    keep = saved.training.keep_snapshots
    missing = missing_snapshot(run_dir, keep) if keep >= 2 else None
    return FinishedRun(
        run_dir=run_dir,
        step=saved.progress.step,
        reason=saved.reason,
        model=averaged if averaged.is_file() else best if best.is_file() else path,
        averaging_missing=(
            keep >= 2
            and not averaged.is_file()
            and (len(snapshot_paths(run_dir)) >= 2 or missing is not None)
        ),
        missing_snapshot=missing,
    )


def _run_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The settings that make another run (its model, tokenizers, corpus) that differ."""
    differences = []
    for section in (
        "model",
        "tokenizer",
        "data.corpus",
        "data.name",
        "data.mixture",
        "data.temperature",
    ):
        old, new = _flat(_get(saved, section), section), _flat(_get(current, section), section)
        differences += [
            f"{key}: {old.get(key)!r} != {new.get(key)!r}"
            for key in sorted(set(old) | set(new))
            if old.get(key) != new.get(key)
        ]
    return differences


def _get(config: dict[str, Any], dotted: str) -> Any:
    for key in dotted.split("."):
        config = config.get(key, {}) if isinstance(config, dict) else {}
    return config


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        return {prefix: value}
    return {
        key: leaf
        for name, item in value.items()
        for key, leaf in _flat(item, f"{prefix}.{name}").items()
    }


def _shown(path: Path) -> str:
    """`path` relative to the current directory when it lies below it, as a user would type it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
