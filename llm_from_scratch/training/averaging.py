"""Checkpoint averaging: the mean of the weights of the last few snapshots of one run.

Averaging the weights seen over the last stretch of training smooths out the noise of the final
updates (Vaswani et al. average the last 5–20 checkpoints). The trainer keeps `keep_snapshots`
weight-only snapshots (`RunDir.snapshots`) and writes their average to `averaged.pt`;
`scripts/average_checkpoints.py` averages any set of checkpoints of one run. An average records
the files and steps it averaged. Each snapshot names the step of the one before it, and `last.pt`
the newest, so that a snapshot deleted from those an average would take shows (`missing_snapshot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from llm_from_scratch.paths import SNAPSHOT_PREFIX, RunDir, snapshot_step


def missing_snapshot(run_dir: RunDir, count: int, newest: int | None = None) -> int | None:
    """The step of the newest snapshot gone from the `count` newest the run wrote (None: none is
    gone, or the files predate the records that tell), following the chain from the newest that
    `last.pt` records (`newest`, where the caller read it; 0: not recorded, as when no `last.pt`
    is left: the newest snapshot) back through each snapshot's predecessor."""
    present = {snapshot_step(path): path for path in run_dir.snapshot_paths()}
    if newest is None and run_dir.last.is_file():
        newest = load_checkpoint(run_dir.last, mmap=True, verify=False)["progress"].get(
            "last_snapshot", 0
        )
    step = newest or max(present, default=0)
    for _ in range(count):
        if step <= 0:
            return None
        if step not in present:
            return step
        step = load_checkpoint(present[step], mmap=True, verify=False).get("previous_snapshot", 0)
    return None


def average_state_dicts(state_dicts: Sequence[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors (summed in fp32); other tensors from the last."""
    if not state_dicts:
        raise ValueError("nothing to average")
    keys = state_dicts[-1].keys()
    averaged = {}
    for key in keys:
        tensors = [state[key] for state in state_dicts]
        if tensors[-1].is_floating_point():
            total = torch.stack([t.float() for t in tensors]).sum(0)
            averaged[key] = (total / len(tensors)).to(tensors[-1].dtype)
        else:
            averaged[key] = tensors[-1].clone()
    return averaged


def average_checkpoints(paths: Sequence[str | Path], output: str | Path) -> dict[str, Any]:
    """Write the inference checkpoint whose weights average those of `paths`; return it.

    All checkpoints must come from one run setup: same model settings and tokenizers.
    """
    if not paths:
        raise CheckpointError("no checkpoints to average")
    states = [load_checkpoint(path) for path in paths]
    reference = states[-1]
    for path, state in zip(paths, states, strict=True):
        if state["config"]["model"] != reference["config"]["model"]:
            raise CheckpointError(f"{path} has other model settings than {paths[-1]}")
        if state["tokenizer_hashes"] != reference["tokenizer_hashes"]:
            raise CheckpointError(f"{path} has other tokenizers than {paths[-1]}")
        if state["model"].keys() != reference["model"].keys():
            raise CheckpointError(f"{path} has other parameters than {paths[-1]}")
    averaged = {
        "model": average_state_dicts([state["model"] for state in states]),
        "config": reference["config"],
        "tokenizers": reference["tokenizers"],
        "tokenizer_hashes": reference["tokenizer_hashes"],
        **({"parent": reference["parent"]} if "parent" in reference else {}),
        "averaged_from": [str(path) for path in paths],
        "averaged_steps": [
            _step_of(path, state) for path, state in zip(paths, states, strict=True)
        ],
    }
    save_checkpoint(output, averaged)
    return averaged


def _step_of(path: str | Path, state: dict[str, Any]) -> int | None:
    """The training step a checkpoint holds: its progress, else a snapshot's name; None: unknown."""
    if "progress" in state:
        return int(state["progress"]["step"])
    name = Path(path).stem
    return snapshot_step(Path(path)) if name.startswith(SNAPSHOT_PREFIX) else None


def record_dev_scores(
    path: str | Path, averaged: dict[str, Any], step: int, metrics: dict[str, float]
) -> None:
    """Rewrite the average `averaged` at `path` with the step its snapshots end at and its dev
    scores, in the keys of a training checkpoint, so that translate and evaluate can say which
    model they use."""
    save_checkpoint(path, {**averaged, "progress": {"step": step}, "metrics": metrics})
