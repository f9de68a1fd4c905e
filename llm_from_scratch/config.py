"""Config schemas of the command-line programs, registered in Hydra's ConfigStore.

Each pipeline stage owns the schema of its config group (`llm_from_scratch/<stage>/config.py`);
this module assembles them into the schemas of the primary configs in `configs/`. Hydra checks
types and unknown keys when it composes a config; `resolve` then builds the dataclasses, whose
`__post_init__` checks the values and raises `ConfigError` naming the bad key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from llm_from_scratch.data.config import DataConfig
from llm_from_scratch.decoding.config import DecodeConfig
from llm_from_scratch.errors import ConfigError, UserError
from llm_from_scratch.model.config import ModelConfig
from llm_from_scratch.tokenizer.config import TokenizerConfig
from llm_from_scratch.training.config import TrainerConfig


@dataclass
class PrepareDataConfig:
    """`scripts/prepare_data.py` (`make data`)."""

    data: DataConfig = MISSING


@dataclass
class TokenizerJobConfig:
    """`scripts/train_tokenizer.py` (`make tokenizer`)."""

    data: DataConfig = MISSING
    tokenizer: TokenizerConfig = MISSING


@dataclass
class TrainConfig:
    """`scripts/train.py` (`make train`)."""

    name: str = "default"  # names the run directory, runs/<name>/
    data: DataConfig = MISSING
    tokenizer: TokenizerConfig = MISSING
    model: ModelConfig = MISSING
    trainer: TrainerConfig = MISSING
    decode: DecodeConfig = MISSING


SCHEMAS = {
    "prepare_data_schema": PrepareDataConfig,
    "train_tokenizer_schema": TokenizerJobConfig,
    "train_schema": TrainConfig,
}


def register_configs() -> None:
    """Make the schemas available to the defaults lists of `configs/*.yaml`."""
    store = ConfigStore.instance()
    for name, schema in SCHEMAS.items():
        store.store(name=name, node=schema)


Schema = TypeVar("Schema")


def resolve(cfg: DictConfig, schema: type[Schema]) -> Schema:
    """Validate a composed config and return it as the schema's dataclass."""
    try:
        config = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as error:
        if isinstance(error.__cause__, UserError):
            raise error.__cause__ from None
        raise ConfigError(str(error).splitlines()[0]) from None
    if not isinstance(config, schema):
        raise ConfigError(f"expected a {schema.__name__} config, got {type(config).__name__}")
    return config


register_configs()
