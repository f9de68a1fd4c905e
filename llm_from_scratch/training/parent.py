"""A fine-tuned run's parent (`training.init_from`): the trained model a new run starts from.

The new run takes the parent's weights, its tokenizers (the data stage tokenizes with them and
trains none) and its model's shape; its optimizer and learning-rate schedule start afresh. Its
checkpoints record the parent (path, sha256, step), which the log and `translate.py` show.

`read_parent` is the one reader of a parent, whatever its form: a checkpoint of this project
(a file, `run:NAME` for a run's final model, or a run directory), or a transformers folder this
project exported (`make export ARGS="--format transformers"`, perhaps shared and fine-tuned
elsewhere since), read back exactly by `export.transformers_model.pretrained_state`. A
CTranslate2 export is refused: its weights are converted for inference, often quantized, and
cannot be trained.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch

from llm_from_scratch.checkpoint import (
    CheckpointSummary,
    file_sha256,
    load_checkpoint,
    restore_tokenizers,
    run_model,
)
from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.errors import UserError
from llm_from_scratch.export.ctranslate2_model import MANIFEST
from llm_from_scratch.export.transformers_model import MANIFEST as TRANSFORMERS_MANIFEST
from llm_from_scratch.export.transformers_model import pretrained_state
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.paths import RunDir
from llm_from_scratch.schema import to_schema
from llm_from_scratch.tokenizer.bpe import BPETokenizer
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.config import TrainConfig
from llm_from_scratch.training.tokenizers import required_characters

RUN_PREFIX = "run:"
# Model settings a fine-tuned run may set: none of them changes a weight's shape or meaning.
TRAINABLE_MODEL_KEYS = frozenset({"dropout"})


class ParentError(UserError):
    """`training.init_from` names no model a run can start from, or one that does not fit."""


@dataclass(frozen=True)
class Parent:
    """The model a fine-tuned run starts from."""

    path: Path
    sha256: str
    step: int | None
    weights: dict[str, torch.Tensor]
    config: dict[str, Any]  # the parent run's config, as plain data
    src_tok: BPETokenizer
    tgt_tok: BPETokenizer

    @property
    def lineage(self) -> dict[str, Any]:
        """What the fine-tuned run's checkpoints record of it (`checkpoint.CheckpointSummary`)."""
        return {"path": str(self.path), "sha256": self.sha256, "step": self.step}

    @property
    def model(self) -> ModelConfig:
        return to_schema(self.config["model"], ModelConfig)

    @property
    def tokenizer(self) -> TokenizerConfig:
        return to_schema(self.config["tokenizer"], TokenizerConfig)

    def __str__(self) -> str:
        return CheckpointSummary.parent_text(self.lineage)


def read_parent(spec: str, runs_dir: str | Path) -> Parent:
    """The parent `training.init_from=spec` names: a checkpoint file, `run:NAME` (the run's final
    model under `runs_dir`) or a run directory; anything else is refused in one line."""
    if spec.startswith(RUN_PREFIX):
        path = run_model(runs_dir, spec.removeprefix(RUN_PREFIX))
    else:
        path = Path(spec).expanduser()
    if path.is_dir() and (path / TRANSFORMERS_MANIFEST).is_file():
        # the tensors are safetensors, which hold no code
        return _parent_of(pretrained_state(path), path, path / "model.safetensors")
    if path.is_dir():
        path = _model_in(path)
    if not path.is_file():
        raise ParentError(
            f"training.init_from={spec}: {path} does not exist; give a checkpoint (.pt), "
            f"{RUN_PREFIX}NAME for a run's final model, or a transformers export's folder"
        )
    return _parent_of(load_checkpoint(path), path, path)  # weights_only=True: no pickled code


def _parent_of(state: dict[str, Any], path: Path, weights_file: Path) -> Parent:
    """The parent a checkpoint's `state` read from `path` describes; its hash is the one of
    `weights_file`, the file that holds its weights."""
    src_tok, tgt_tok = restore_tokenizers(state, str(path))
    return Parent(
        path=path.resolve(),
        sha256=file_sha256(weights_file),
        step=state.get("progress", {}).get("step"),
        weights=state["model"],
        config=state["config"],
        src_tok=src_tok,
        tgt_tok=tgt_tok,
    )


def _model_in(directory: Path) -> Path:
    """The checkpoint a directory given as a parent holds: a run directory's final model."""
    final_models = RunDir(directory).final_models
    names = " or ".join(path.name for path in final_models)
    if (directory / MANIFEST).is_file():
        raise ParentError(
            f"training.init_from={directory} is a CTranslate2 export, which cannot be trained: "
            "its weights are converted for CTranslate2's inference (often quantized) and it "
            "holds no training state; start from the checkpoint it was exported from "
            f"(its run's {names})"
        )
    for path in final_models:
        if path.is_file():
            return path
    raise ParentError(
        f"training.init_from={directory} is a directory without {names}: "
        f"give a checkpoint file or {RUN_PREFIX}NAME"
    )


def adopt_parent(config: TrainConfig, parent: Parent, chosen: Collection[str]) -> TrainConfig:
    """`config` as a fine-tuned run of `parent` trains it: the parent's model shape (the run's
    dropout) and tokenizer settings. `chosen`: the keys the command or its experiment set
    (`model`, `model.d_model`, `tokenizer.vocab_size`, ...); one that would change the parent's
    model or tokenizers is refused in one line, naming it, as is data the tokenizers do not fit."""
    model = _adopted(config.model, parent.model, "model", chosen, TRAINABLE_MODEL_KEYS, parent)
    tokenizer = _adopted(config.tokenizer, parent.tokenizer, "tokenizer", chosen, (), parent)
    check_data_fits(config.data, parent)
    return replace(config, model=model, tokenizer=tokenizer)


def _adopted(
    mine: Any,
    theirs: Any,
    group: str,
    chosen: Collection[str],
    own: Collection[str],
    parent: Parent,
) -> Any:
    """`theirs` (the parent's settings of `group`), with this run's values of the keys in `own`;
    a chosen key that differs from the parent's is an error."""
    for item in fields(mine):
        key, value, parents = (
            f"{group}.{item.name}",
            getattr(mine, item.name),
            getattr(theirs, item.name),
        )
        if item.name in own or value == parents:
            continue
        if group in chosen or key in chosen:
            what = "model" if group == "model" else "tokenizers"
            raise ParentError(
                f"{key}={value!r} would change the parent's {what} ({parents!r} in {parent.path}): "
                f"a run started from training.init_from keeps them; drop the setting"
            )
    return replace(theirs, **{name: getattr(mine, name) for name in own})


def check_data_fits(data: DataConfig, parent: Parent) -> None:
    """Refuse data the parent's tokenizers or direction do not fit."""
    trained = parent.config["data"]
    direction = f"{data.source_lang}-{data.target_lang}"
    saved = to_schema(trained, DataConfig)
    theirs = f"{saved.source_lang}-{saved.target_lang}"
    if direction != theirs:
        raise ParentError(
            f"data.direction: this run translates {direction}, the parent {parent.path} {theirs}"
        )
    for side, tok in (("source", parent.src_tok), ("target", parent.tgt_tok)):
        missing = [char for char in required_characters(data) if char not in tok.alphabet]
        if missing:
            raise ParentError(
                f"data.number_placeholders / data.name_placeholders: the parent's {side} "
                f"tokenizer ({parent.path}) has no token for {len(missing)} placeholder(s); "
                "set them as the parent's run did"
            )
