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
from omegaconf import OmegaConf

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.config import TrainConfig, resolve
from llm_from_scratch.errors import UserError
from llm_from_scratch.model import Seq2SeqTransformer
from llm_from_scratch.tokenizer import BPETokenizer

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


def inference_state(
    model: Seq2SeqTransformer,
    src_tokenizer: BPETokenizer,
    tgt_tokenizer: BPETokenizer,
    config: TrainConfig,
) -> dict[str, Any]:
    """What a checkpoint needs for translation: weights, resolved config and both tokenizers."""
    return {
        "model": model.state_dict(),
        "config": OmegaConf.to_container(OmegaConf.structured(config)),
        "tokenizers": {"src": src_tokenizer.to_json(), "tgt": tgt_tokenizer.to_json()},
        "tokenizer_hashes": {"src": src_tokenizer.hash, "tgt": tgt_tokenizer.hash},
    }


def restore_for_inference(
    state: dict[str, Any], device: str | torch.device = "cpu"
) -> tuple[Seq2SeqTransformer, BPETokenizer, BPETokenizer, TrainConfig]:
    """Rebuild the model (in eval mode, on `device`) and the tokenizers from a loaded checkpoint."""
    config = resolve(
        OmegaConf.merge(OmegaConf.structured(TrainConfig), state["config"]), TrainConfig
    )
    src_tokenizer = BPETokenizer.from_json(state["tokenizers"]["src"])
    tgt_tokenizer = BPETokenizer.from_json(state["tokenizers"]["tgt"])
    model = Seq2SeqTransformer(
        config.model,
        src_vocab_size=src_tokenizer.vocab_size,
        tgt_vocab_size=tgt_tokenizer.vocab_size,
        pad_id=tgt_tokenizer.pad_id,
        shared_vocab=config.tokenizer.shared,
    )
    model.load_state_dict(state["model"])
    return model.to(device).eval(), src_tokenizer, tgt_tokenizer, config


def check_compatible(
    state: dict[str, Any],
    config: TrainConfig,
    src_tokenizer: BPETokenizer,
    tgt_tokenizer: BPETokenizer,
    path: str | Path,
) -> None:
    """Refuse to resume from a checkpoint whose tokenizers or model differ from this run's."""
    differences = []
    for side, tokenizer in (("src", src_tokenizer), ("tgt", tgt_tokenizer)):
        saved = state["tokenizer_hashes"][side]
        if saved != tokenizer.hash:
            differences.append(f"{side} tokenizer hash {saved[:12]}… != {tokenizer.hash[:12]}…")
    saved_model = state["config"]["model"]
    current_model = OmegaConf.to_container(OmegaConf.structured(config.model))
    for key in sorted(set(saved_model) | set(current_model)):
        if saved_model.get(key) != current_model.get(key):
            differences.append(
                f"model.{key}: {saved_model.get(key)!r} != {current_model.get(key)!r}"
            )
    if differences:
        raise CheckpointError(
            f"{path} was trained with other settings (checkpoint != this run): "
            + "; ".join(differences)
            + ". Use another trainer.run_dir (or name) to start a new run."
        )
