"""Checkpoints: plain dicts of tensors and Python values, written atomically, loaded safely.

A checkpoint is self-contained for inference: besides the weights it holds the run's resolved
config (as plain data, in the layout of the train program's config) and both tokenizers as their
JSON text, so `translate.py` needs nothing but the file. Training state (optimizer, scheduler,
scaler, step, sampler position, RNG states) rides along for exact resume. Everything is loadable
with `torch.load(..., weights_only=True)`: no pickled code runs on load.

Each file carries the sha256 of its tensors (`tensor_digest`), checked when it loads: a file
damaged on disk or in a copy is refused in one line before anything uses its weights. A file
from before the digest is checked for non-finite weights instead, what damage there shows as.

This is also the one place that builds a model from its tokenizers (`build_model`).
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from llm_from_scratch.atomic import atomic_writer
from llm_from_scratch.display import shown
from llm_from_scratch.errors import UserError
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.model.transformer import Seq2SeqTransformer
from llm_from_scratch.paths import RunDir, project_root
from llm_from_scratch.schema import to_data, to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer

# 2: config groups `training`/`decoding` (were `trainer`/`decode`) and a nested `data` config.
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
ZIP_START = b"PK\x03\x04"  # a zip archive's first local file header: torch.save's format
# The key of the sha256 of a checkpoint's tensors (`tensor_digest`); absent from older files.
DIGEST_KEY = "tensor_sha256"


class CheckpointError(UserError):
    """A checkpoint is missing, truncated, from another format version, or does not fit the run."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write `state` with the digest of its tensors, atomically: a crash mid-write never leaves
    half a checkpoint behind, and a full disk is a one-line `DiskFullError` that keeps the
    previous file."""
    state = {key: value for key, value in state.items() if key != DIGEST_KEY}
    with atomic_writer(path) as file:
        torch.save(
            {**state, "format_version": FORMAT_VERSION, DIGEST_KEY: tensor_digest(state)}, file
        )


def load_checkpoint(
    path: str | Path,
    map_location: str | torch.device = "cpu",
    mmap: bool = False,
    verify: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint written by `save_checkpoint`, with a clear error for a bad file.

    `mmap`: map the tensors rather than read them, for a look at the other entries; `verify`
    False skips the integrity check, for a look that uses none of its tensors."""
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    if path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint {path} is empty (0 bytes): it was never written whole")
    if not zipfile.is_zipfile(path):  # what torch.save writes; torch misreads anything else
        with path.open("rb") as file:
            start = file.read(16)
        if start.startswith(ZIP_START):
            raise CheckpointError(
                f"checkpoint {path} is truncated: a zip archive without its end, as a copy or "
                "a write cut short leaves it; copy it again or use another"
            )
        raise CheckpointError(
            f"checkpoint {path} is not a checkpoint (torch.save writes a zip archive; this file "
            f"starts {start!r})"
        )
    try:
        state = torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as error:  # torch raises several types for truncated or foreign files
        raise CheckpointError(
            f"checkpoint {path} cannot be read (truncated or not a checkpoint of this project): "
            f"{reason(error)}"
        ) from None
    version = state.get("format_version") if isinstance(state, dict) else None
    if version not in READABLE_VERSIONS:
        raise CheckpointError(
            f"checkpoint {path} has format version {version!r}; this version reads "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    missing = [
        key for key in ("model", "config", "tokenizers", "tokenizer_hashes") if key not in state
    ]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(missing)}: it is incomplete")
    if verify:
        check_integrity(state, str(path))
    if version == 1:
        state["config"] = upgrade_config_v1(state["config"])
    return state


def reason(error: BaseException) -> str:
    """An error's type and the first line of its message, which alone may say nothing
    (`EOFError()`, an `IndexError`'s `list index out of range`)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def tensor_digest(state: dict[str, Any]) -> str:
    """The sha256 of every tensor of `state` (the format's own keys aside), each with its name,
    dtype and shape: what a flipped byte anywhere in the weights or the training state changes."""
    digest = hashlib.sha256()
    for name, tensor in _tensors(
        {key: value for key, value in state.items() if key not in (DIGEST_KEY, "format_version")}
    ):
        digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}\n".encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _tensors(value: Any, name: str = "") -> Iterator[tuple[str, torch.Tensor]]:
    """The tensors nested in `value` (dicts, lists, tuples), each with its path, in key order."""
    if isinstance(value, torch.Tensor):
        yield name, value
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            yield from _tensors(value[key], f"{name}/{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _tensors(item, f"{name}/{index}")


def check_integrity(state: dict[str, Any], origin: str) -> None:
    """Refuse a checkpoint whose tensors differ from the digest saved with them; one from before
    the digest, whose weights hold non-finite values."""
    saved = state.get(DIGEST_KEY)
    if saved is not None:
        actual = tensor_digest(state)
        if actual != saved:
            raise CheckpointError(
                f"checkpoint {origin} is damaged: its tensors do not match the sha256 saved "
                f"with them ({actual[:12]}… != {saved[:12]}…); copy it again or use another"
            )
        return
    check_finite(state["model"], f"checkpoint {origin}")


def _finite(tensor: torch.Tensor) -> bool:
    """Whether every value of a floating tensor is finite. In numpy: torch's own check splits
    each tensor between threads, which on a busy CPU wait for each other longer than they work."""
    values = tensor.detach().cpu()
    if values.dtype not in (torch.float32, torch.float64):
        values = values.float()  # bf16 and half have no numpy type
    return bool(np.isfinite(values.numpy()).all())


def check_finite(weights: dict[str, Any], origin: str) -> None:
    """Refuse weights holding NaN or infinity, naming the first such tensor."""
    for name, tensor in weights.items():
        floating = isinstance(tensor, torch.Tensor) and tensor.is_floating_point()
        if floating and not _finite(tensor):
            raise CheckpointError(
                f"{origin} is damaged: {name} holds non-finite values (NaN or infinity)"
            )


def upgrade_config_v1(config: dict[str, Any]) -> dict[str, Any]:
    """A version-1 run config in the current layout: groups renamed, data settings nested, the
    directories (now the `paths` group) dropped."""
    config = dict(config)
    config["training"] = {k: v for k, v in config.pop("trainer").items() if k != "run_dir"}
    config["decoding"] = config.pop("decode")
    config["tokenizer"] = {k: v for k, v in config["tokenizer"].items() if k != "dir"}
    sections = {
        "corpus": (
            "format", "splits", "src_lang", "tgt_lang", "src_column", "tgt_column", "split_seed",
            "dev_fraction", "test_fraction", "detokenize_ja", "source_style",
        ),
        "cleaning": ("max_tokens", "max_length_ratio"),
        "loading": (
            "batch_tokens", "pool_size", "shuffle_seed", "num_workers", "num_proc", "bpe_dropout"
        ),
    }  # fmt: skip
    data = {k: v for k, v in config["data"].items() if k not in ("raw_dir", "cache_dir")}
    for section, keys in sections.items():
        data[section] = {key: data.pop(key) for key in keys if key in data}
    config["data"] = data
    return config


def build_model(
    cfg: ModelConfig, src_tokenizer: BPETokenizer, tgt_tokenizer: BPETokenizer, shared_vocab: bool
) -> Seq2SeqTransformer:
    """The model `cfg` describes, sized for these tokenizers."""
    return Seq2SeqTransformer(
        cfg,
        src_vocab_size=src_tokenizer.vocab_size,
        tgt_vocab_size=tgt_tokenizer.vocab_size,
        pad_id=tgt_tokenizer.pad_id,
        shared_vocab=shared_vocab,
    )


def inference_state(
    model: Seq2SeqTransformer,
    src_tokenizer: BPETokenizer,
    tgt_tokenizer: BPETokenizer,
    config: Any,
) -> dict[str, Any]:
    """What a checkpoint needs for translation: weights, the run's config (a dataclass) and both
    tokenizers."""
    return {
        "model": model.state_dict(),
        "config": to_data(config),
        "tokenizers": {"src": src_tokenizer.to_json(), "tgt": tgt_tokenizer.to_json()},
        "tokenizer_hashes": {"src": src_tokenizer.hash, "tgt": tgt_tokenizer.hash},
    }


def restore_tokenizers(state: dict[str, Any], origin: str) -> tuple[BPETokenizer, BPETokenizer]:
    """The checkpoint's tokenizers, checked against the hashes it stores."""
    tokenizers = []
    for side in ("src", "tgt"):
        tokenizer = BPETokenizer.from_json(
            state["tokenizers"][side], f"{origin} ({side} tokenizer)"
        )
        saved = state["tokenizer_hashes"][side]
        if tokenizer.hash != saved:
            raise CheckpointError(
                f"{origin}: its {side} tokenizer does not match the hash it was saved with "
                f"({tokenizer.hash[:12]}… != {saved[:12]}…); the file was altered"
            )
        tokenizers.append(tokenizer)
    return tokenizers[0], tokenizers[1]


def restore_for_inference(
    state: dict[str, Any], device: str | torch.device = "cpu", origin: str = "checkpoint"
) -> tuple[Seq2SeqTransformer, BPETokenizer, BPETokenizer, dict[str, Any]]:
    """The model (in eval mode, on `device`), the tokenizers and the run's config (plain data) of
    a loaded checkpoint; `origin` names it in errors."""
    config = state["config"]
    src_tokenizer, tgt_tokenizer = restore_tokenizers(state, origin)
    model = build_model(
        to_schema(config["model"], ModelConfig),
        src_tokenizer,
        tgt_tokenizer,
        shared_vocab=config["tokenizer"]["shared"],
    )
    load_weights(model, state["model"], origin)
    return model.to(device).eval(), src_tokenizer, tgt_tokenizer, config


def load_weights(model: torch.nn.Module, weights: dict[str, Any], origin: str) -> None:
    """`model.load_state_dict(weights)`, with a one-line error when they do not fit."""
    try:
        model.load_state_dict(weights)
    except RuntimeError as error:
        problems = [line.strip() for line in str(error).splitlines()[1:] if line.strip()]
        raise CheckpointError(
            f"{origin}: its weights do not fit the model its config describes "
            f"({problems[0] if problems else error})"
        ) from None


def check_compatible(
    state: dict[str, Any],
    model_cfg: ModelConfig,
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
    current_model = to_data(model_cfg)
    for key in sorted(set(saved_model) | set(current_model)):
        if saved_model.get(key) != current_model.get(key):
            differences.append(
                f"model.{key}: {saved_model.get(key)!r} != {current_model.get(key)!r}"
            )
    if differences:
        raise CheckpointError(
            f"{path} was trained with other settings (checkpoint != this run): "
            + "; ".join(differences)
            + ". Use another name (or paths.run_dir) to start a new run."
        )


def checkpoint_path(path: str | Path) -> Path:
    """The file (or export folder) `path` names: a relative path from the working directory, as
    a shell reads it, else from the project root, as a run's name is read (`run_model`), so that
    `runs/default/best.pt` is found from anywhere. One found in neither is refused naming both."""
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    rooted = project_root() / path
    if rooted.exists():
        return rooted
    raise CheckpointError(
        f"checkpoint {path} does not exist (looked for {Path.cwd() / path} and {rooted})"
    )


def run_model(runs_dir: str | Path, run: str) -> Path:
    """The final model of the run called `run` under `runs_dir` (see `RunDir.final_models`)."""
    final_models = RunDir.named(runs_dir, run).final_models
    for path in final_models:
        if path.is_file():
            return path
    runs = runs_with_models(runs_dir)
    available = f"runs with a model: {', '.join(runs)}" if runs else "no run has a model yet"
    names = " or ".join(path.name for path in final_models)
    raise CheckpointError(
        f"no run {run!r} with {names} under {runs_dir} ({available}); "
        "`make train` makes the run `default`"
    )


def runs_with_models(runs_dir: str | Path) -> list[str]:
    """The names of the runs under `runs_dir` that have a final model, sorted."""
    runs_dir = Path(runs_dir)
    names = [path.name for path in RunDir(runs_dir).final_models]
    found = {path.parent for name in names for path in runs_dir.glob(f"**/{name}")}
    return sorted(str(run_dir.relative_to(runs_dir)) for run_dir in found)


@dataclass(frozen=True)
class CheckpointSummary:
    """Which model a checkpoint holds, as translate and evaluate report it."""

    path: Path
    step: int | None  # training steps behind it; None when not recorded
    dev_bleu: float | None  # greedy BLEU on the dev sentences validation scores
    averaged_from: int  # snapshots averaged into it; 0 for a single checkpoint
    # The model its run started from (`training.init_from`): path, sha256, step; None: none.
    parent: dict[str, Any] | None = None

    @classmethod
    def of(cls, state: dict[str, Any], path: str | Path) -> CheckpointSummary:
        return cls(
            path=Path(path),
            step=state.get("progress", {}).get("step"),
            dev_bleu=state.get("metrics", {}).get("bleu"),
            averaged_from=len(state.get("averaged_from", [])),
            parent=state.get("parent"),
        )

    def __str__(self) -> str:
        facts = [f"average of {self.averaged_from} snapshots"] if self.averaged_from else []
        facts.append(f"step {self.step}" if self.step is not None else "step not recorded")
        if self.dev_bleu is not None:
            facts.append(f"greedy dev BLEU {self.dev_bleu:.1f}")
        if self.parent is not None:
            facts.append(f"fine-tuned from {self.parent_text(self.parent)}")
        return f"{shown(self.path)} ({', '.join(facts)})"

    @staticmethod
    def parent_text(parent: dict[str, Any]) -> str:
        """A parent's lineage entry as the log and translate.py show it."""
        step = "step not recorded" if parent["step"] is None else f"step {parent['step']}"
        return f"{shown(parent['path'])} ({step}, sha256 {parent['sha256'][:12]})"


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read a megabyte at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
