"""Checkpoints: plain dicts of tensors and Python values, written atomically, loaded safely.

A checkpoint is self-contained for inference: besides the weights it holds the resolved config and
both tokenizers as their JSON text, so `translate.py` needs nothing but the file. Training state
(optimizer, scheduler, scaler, step, sampler position, RNG states) rides along for exact resume.
Everything is loadable with `torch.load(..., weights_only=True)`: no pickled code runs on load.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.errors import UserError

FORMAT_VERSION = 1


class CheckpointError(UserError):
    """A checkpoint is missing, truncated, from another format version, or does not fit the run."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write `state` atomically: a crash mid-write never leaves half a checkpoint behind."""
    with atomic_writer(path) as file:
        torch.save({"format_version": FORMAT_VERSION, **state}, file)


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load a checkpoint written by `save_checkpoint`, with a clear error for a bad file."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as error:  # torch raises several types for truncated or foreign files
        raise CheckpointError(
            f"checkpoint {path} cannot be read (truncated or not a checkpoint of this project): "
            f"{str(error).splitlines()[0]}"
        ) from None
    if not isinstance(state, dict) or state.get("format_version") != FORMAT_VERSION:
        version = state.get("format_version") if isinstance(state, dict) else None
        raise CheckpointError(
            f"checkpoint {path} has format version {version!r}; this version reads {FORMAT_VERSION}"
        )
    return state
