"""A finished run: its rerun trains nothing, changes no file and says where its model is.

A run that stopped (all its steps, its epochs, or early stopping) is finished. It is not continued
under other stopping settings (say a larger `training.max_steps`): its learning-rate schedule was
laid out for the steps it had, so the longer run would be one that no uninterrupted run trains.
The train program asks `finished_run` before it claims the run directory (Hydra records the config
only afterwards, see `configs/train.yaml`), so that the rerun of a finished run writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_from_scratch.display import shown
from llm_from_scratch.paths import RunDir
from llm_from_scratch.schema import to_data
from llm_from_scratch.training.averaging import missing_snapshot
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.lock import NEW_RUN
from llm_from_scratch.training.plan import Plan
from llm_from_scratch.training.resume import (
    FinishedRunError,
    SavedRun,
    check_stopping_settings,
)


@dataclass(frozen=True)
class FinishedRun:
    run_dir: RunDir
    step: int
    reason: str
    model: Path  # what translate.py and evaluate.py use by default
    averaging_missing: bool  # snapshots to average, but no averaged.pt
    missing_snapshot: int | None  # the step of a snapshot gone from those it would average

    def report(self, translate_command: str) -> str:
        """What a rerun says; `translate_command` translates with the run's model."""
        lines = [
            f"{shown(self.run_dir.root)} is finished at step {self.step} ({self.reason}): nothing "
            "to train, no file changed",
            f"its model: {shown(self.model)}",
            f"translate with: {translate_command}",
        ]
        command = (
            f".venv/bin/python scripts/average_checkpoints.py --run-dir {shown(self.run_dir.root)}"
        )
        averaged = self.run_dir.averaged.name
        if self.averaging_missing and self.missing_snapshot is not None:
            lines.append(
                f"{averaged} is missing, and so is the snapshot of step {self.missing_snapshot} "
                f"(deleted?): average the snapshots left with: {command} --allow-gaps"
            )
        elif self.averaging_missing:
            lines.append(
                f"{averaged} is missing (deleted, or the run stopped before writing it); write "
                f"it with: {command}"
            )
        return "\n".join(lines)


def finished_run(
    run_dir: RunDir,
    config: TrainConfig,
    saved: SavedRun | None,
    trained: Plan | None,
) -> FinishedRun | None:
    """The run in `run_dir` when it has finished (None: it has steps left, or none yet).
    `saved`: what the run continues from, as `resume.read_saved_run` read it; `trained`: its
    plan under this command (`resume.saved_plan`).

    Raises `FinishedRunError` when `config` describes another run (another model, tokenizer or
    corpus) or would continue this one."""
    if saved is None or trained is None or not saved.finished:
        return None
    current = {
        **to_data(config),
        "model": to_data(trained.model),
        "tokenizer": to_data(trained.tokenizer),
    }
    differences = _run_differences(saved.state["config"], current)
    if differences:
        raise FinishedRunError(
            f"{run_dir} finished at step {saved.progress.step} as another run (its "
            f"settings != this command's): {'; '.join(differences)}; {NEW_RUN}"
        )
    check_stopping_settings(saved, config.training)
    averaged, best = run_dir.averaged, run_dir.best
    keep = saved.training.keep_snapshots
    missing = missing_snapshot(run_dir, keep, saved.progress.last_snapshot) if keep >= 2 else None
    return FinishedRun(
        run_dir=run_dir,
        step=saved.progress.step,
        reason=saved.reason,
        model=averaged if averaged.is_file() else best if best.is_file() else saved.path,
        averaging_missing=(
            keep >= 2
            and not averaged.is_file()
            and (len(run_dir.snapshot_paths()) >= 2 or missing is not None)
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
