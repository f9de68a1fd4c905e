"""Hydra compositions of the project's configs, each made once per test process.

Composing (Hydra's defaults lists, OmegaConf's merges) and validating take a good share of the
fast tests' time, and many tests compose the same overrides. A composition depends only on the
config files, the overrides and the project root, so it is kept, and every caller gets a copy of
its own to change. A validated config is kept only where its paths are the project's own: one
under a test's folder is checked against what the test has made there by then.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

# The programs register their config schemas in Hydra's ConfigStore when imported.
import llm_from_scratch.programs.prepare_data
import llm_from_scratch.programs.train_tokenizer  # noqa: F401
from llm_from_scratch.paths import ROOT_VARIABLE
from llm_from_scratch.programs.train import TrainConfig
from llm_from_scratch.schema import to_schema

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def composed(name: str = "train", overrides: Sequence[str] = ()) -> DictConfig:
    """`configs/<name>.yaml` composed with `overrides`, as the scripts compose it."""
    return copy.deepcopy(_composed(name, tuple(overrides), os.environ.get(ROOT_VARIABLE)))


def composed_train(*overrides: str) -> TrainConfig:
    """The validated `TrainConfig` that `configs/train.yaml` composes into with `overrides`."""
    root = os.environ.get(ROOT_VARIABLE)
    if root is not None or any(sets_a_path(override) for override in overrides):
        return to_schema(_composed("train", overrides, root), TrainConfig)
    return copy.deepcopy(_validated_train(overrides))


def sets_a_path(override: str) -> bool:
    """Whether `override` sets a `paths.` key, e.g. `paths.root=/tmp/x` or `+paths.run_dir=…`."""
    return override.lstrip("+~").startswith("paths")


@functools.cache
def _composed(name: str, overrides: tuple[str, ...], root: str | None) -> DictConfig:
    # `root`: the project root that `${project_root:}` reads, part of the key
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name=name, overrides=list(overrides))


@functools.cache
def _validated_train(overrides: tuple[str, ...]) -> TrainConfig:
    return to_schema(_composed("train", overrides, None), TrainConfig)
