"""A run's models as a `SearchModel`, with the settings its config holds: from checkpoints (one
model, or an `Ensemble` of several), a CTranslate2 export or a transformers export."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch

from llm_from_scratch.checkpoint import (
    CheckpointError,
    CheckpointSummary,
    checkpoint_path,
    load_checkpoint,
    restore_for_inference,
)
from llm_from_scratch.data.config import CorpusConfig, DataConfig
from llm_from_scratch.decoding.common import SearchModel
from llm_from_scratch.decoding.config import DecodingConfig
from llm_from_scratch.decoding.ctranslate2_engine import CTranslate2Model
from llm_from_scratch.decoding.ensemble import Ensemble
from llm_from_scratch.decoding.torch_engine import TorchModel
from llm_from_scratch.export.transformers_model import pretrained_state
from llm_from_scratch.schema import to_schema, with_overrides


class RestoredModels(NamedTuple):
    model: SearchModel  # one checkpoint's model, the ensemble of several, or an export's engine
    config: dict[str, Any]  # the first checkpoint's run config, as plain data
    checkpoints: list[CheckpointSummary]  # what each checkpoint holds, in order


def data_settings(config: dict[str, Any]) -> DataConfig:
    """What a run's config (plain data, as a checkpoint or an export holds it) says of its
    direction (`source_lang`, `target_lang`), the style its input is put in and its placeholders:
    a data config of its corpus and direction alone, since its other settings (sources,
    batching) were checked by the rules of the version that trained it."""
    data = config["data"]
    return DataConfig(
        name=data["name"],
        source="local",
        direction=data.get("direction"),
        corpus=to_schema(data["corpus"], CorpusConfig),
        number_placeholders=data.get("number_placeholders", False),
        name_placeholders=data.get("name_placeholders", False),
        number_digits=data.get("number_digits", DataConfig.number_digits),
    )


def decoding_settings(
    config: dict[str, Any], decode: DecodingConfig | None, overrides: dict[str, Any]
) -> DecodingConfig:
    """`decode`, else the decoding settings of a run's config (as `data_settings` reads it),
    with the keys of `overrides` replaced."""
    decode = decode or to_schema(config["decoding"], DecodingConfig)
    return with_overrides(decode, overrides, "decoding") if overrides else decode


def restore_models(paths: Sequence[str | Path], device: torch.device) -> RestoredModels:
    """The model of one checkpoint, or the `Ensemble` of several, with the first one's tokenizers
    and run config; every checkpoint must have the same tokenizers and source style. A relative
    path is read as `checkpoint_path` reads it."""
    paths = [checkpoint_path(path) for path in paths]
    restored, summaries = [], []
    for path in paths:
        state = load_checkpoint(path)
        summaries.append(CheckpointSummary.of(state, path))
        restored.append(restore_for_inference(state, device, origin=str(path)))
    model, src_tok, tgt_tok, config = restored[0]
    for path, (_, other_src, other_tgt, other_config) in zip(paths[1:], restored[1:], strict=True):
        if (other_src.hash, other_tgt.hash) != (src_tok.hash, tgt_tok.hash):
            raise CheckpointError(
                f"{path} cannot decode in an ensemble with {paths[0]}: their tokenizers differ "
                "(ensemble members must be trained with the same tokenizer files)"
            )
        data, other = data_settings(config), data_settings(other_config)
        for what, mine, theirs in (
            ("direction", _direction(data), _direction(other)),
            ("source style", data.input_style, other.input_style),
        ):
            if theirs != mine:
                raise CheckpointError(
                    f"{path} cannot decode in an ensemble with {paths[0]}: {what} "
                    f"{theirs!r} != {mine!r}"
                )
    if len(restored) > 1:
        model = Ensemble([member for member, *_ in restored])
    return RestoredModels(TorchModel(model, src_tok, tgt_tok), config, summaries)


def restore_export(
    directory: str | Path, device: str = "auto", compute_type: str = "default"
) -> RestoredModels:
    """The CTranslate2 engine of an export directory (`make export`), with its run config."""
    directory = checkpoint_path(directory)
    model = CTranslate2Model(directory, device=device, compute_type=compute_type)
    manifest = model.manifest
    loaded = CheckpointSummary(
        Path(directory), manifest["step"], manifest["dev_bleu"], manifest["averaged_from"]
    )
    return RestoredModels(model, model.config, [loaded])


def restore_pretrained(directory: str | Path, device: torch.device) -> RestoredModels:
    """A transformers folder this project exported, read back into this project's model."""
    directory = checkpoint_path(directory)
    state = pretrained_state(directory)
    model, src_tok, tgt_tok, config = restore_for_inference(state, device, origin=str(directory))
    loaded = CheckpointSummary.of(state, directory)
    return RestoredModels(TorchModel(model, src_tok, tgt_tok), config, [loaded])


def _direction(data: DataConfig) -> str:
    return f"{data.source_lang}-{data.target_lang}"
